// NcclUniqueId: creation and the hex text form a launcher passes to every rank.
#include <switchyard/nccl.hpp>

#include "nccl_errors.hpp"

#include <cctype>
#include <cstring>

namespace switchyard {

static_assert(sizeof(ncclUniqueId) == NcclUniqueId::kBytes,
              "NcclUniqueId::kBytes must match NCCL_UNIQUE_ID_BYTES");

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string printable(char c) {
  if (std::isprint(static_cast<unsigned char>(c))) return std::string("'") + c + "'";
  return "byte " + std::to_string(static_cast<unsigned>(static_cast<unsigned char>(c)));
}

}  // namespace

NcclUniqueId NcclUniqueId::create() {
  ncclUniqueId id;
  const ncclResult_t result = ncclGetUniqueId(&id);
  if (!nccl_detail::nccl_succeeded(result)) {
    throw Error(SY_ERR_COMMUNICATION,
                nccl_detail::nccl_failure("NcclUniqueId::create: ncclGetUniqueId", result,
                                          nullptr));
  }
  NcclUniqueId out;
  std::memcpy(out.bytes_.data(), id.internal, kBytes);
  return out;
}

NcclUniqueId NcclUniqueId::from_bytes(const std::array<unsigned char, kBytes>& bytes) {
  NcclUniqueId out;
  out.bytes_ = bytes;
  return out;
}

NcclUniqueId NcclUniqueId::from_hex(const std::string& hex) {
  const auto first = hex.find_first_not_of(" \t\r\n");
  const auto last = hex.find_last_not_of(" \t\r\n");
  const std::string text =
      first == std::string::npos ? std::string() : hex.substr(first, last - first + 1);
  if (text.size() != kHexChars) {
    throw Error(SY_ERR_INVALID_ARGUMENT,
                "NcclUniqueId::from_hex: the text is " + std::to_string(text.size()) +
                    " characters long; expected " + std::to_string(kHexChars) +
                    " hex digits, as NcclUniqueId::to_hex() (or sy_nccl_get_unique_id) writes "
                    "them. Was the value cut short when it was passed on?");
  }
  NcclUniqueId out;
  for (size_t i = 0; i < kBytes; ++i) {
    const int high = hex_value(text[2 * i]);
    const int low = hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) {
      const size_t bad = high < 0 ? 2 * i : 2 * i + 1;
      throw Error(SY_ERR_INVALID_ARGUMENT,
                  "NcclUniqueId::from_hex: character " + std::to_string(bad) + " is " +
                      printable(text[bad]) + "; expected a hex digit (0-9, a-f).");
    }
    out.bytes_[i] = static_cast<unsigned char>(high * 16 + low);
  }
  return out;
}

std::string NcclUniqueId::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(kHexChars, '0');
  for (size_t i = 0; i < kBytes; ++i) {
    text[2 * i] = kDigits[bytes_[i] >> 4];
    text[2 * i + 1] = kDigits[bytes_[i] & 0xf];
  }
  return text;
}

}  // namespace switchyard
