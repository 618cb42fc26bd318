// libswitchyard-nccl without a GPU: it links, the unique-id text round-trips, and arguments it
// can judge on the host are refused with a message. (GPU collectives: the GPU suite.)
#include <doctest/doctest.h>

#include <switchyard/nccl.h>
#include <switchyard/nccl.hpp>

#include <array>
#include <cctype>
#include <cstring>
#include <random>
#include <string>

extern "C" sy_status nccl_c_wrap_null(char* message, size_t capacity);  // a C99 caller

using switchyard::NcclComm;
using switchyard::NcclUniqueId;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

sy_error fresh_error() {
  sy_error err{};
  err.struct_size = sizeof(sy_error);
  err.status = -1;
  std::strcpy(err.message, "<untouched>");
  return err;
}

NcclUniqueId random_id(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::array<unsigned char, NcclUniqueId::kBytes> bytes{};
  for (unsigned char& b : bytes) b = static_cast<unsigned char>(rng());
  return NcclUniqueId::from_bytes(bytes);
}

}  // namespace

TEST_CASE("nccl: unique id hex text round-trips") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const NcclUniqueId id = random_id(seed);
    const std::string hex = id.to_hex();
    CHECK(hex.size() == NcclUniqueId::kHexChars);
    CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
    CHECK(NcclUniqueId::from_hex(hex) == id);
    // Upper case and the newline a shell or a file adds are accepted.
    std::string upper = hex;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(NcclUniqueId::from_hex(" " + upper + "\n") == id);
  }
  CHECK(random_id(1) != random_id(2));
  std::array<unsigned char, NcclUniqueId::kBytes> known{};
  known[0] = 0x00;
  known[1] = 0xab;
  known[127] = 0x0f;
  const std::string hex = NcclUniqueId::from_bytes(known).to_hex();
  CHECK(hex.substr(0, 4) == "00ab");
  CHECK(hex.substr(252) == "000f");
}

TEST_CASE("nccl: malformed unique id text is refused with the reason") {
  CHECK_THROWS_WITH_AS(NcclUniqueId::from_hex("abc"),
                       doctest::Contains("the text is 3 characters long; expected 256 hex digits"),
                       switchyard::Error);
  std::string bad = random_id(3).to_hex();
  bad[17] = 'g';
  CHECK_THROWS_WITH_AS(NcclUniqueId::from_hex(bad),
                       "NcclUniqueId::from_hex: character 17 is 'g'; expected a hex digit "
                       "(0-9, a-f).",
                       switchyard::Error);
}

TEST_CASE("nccl: a fresh unique id, where the machine allows one") {
  // ncclGetUniqueId needs a network interface, not a GPU; in a sandbox without one it must
  // fail with NCCL's message rather than crash.
  try {
    const NcclUniqueId id = NcclUniqueId::create();
    CHECK(id != NcclUniqueId::from_bytes({}));
    CHECK(NcclUniqueId::from_hex(id.to_hex()) == id);
    char text[SY_NCCL_UNIQUE_ID_HEX_CHARS + 1];
    sy_error err = fresh_error();
    CHECK(sy_nccl_get_unique_id(text, sizeof text, &err) == SY_OK);
    CHECK(std::strlen(text) == SY_NCCL_UNIQUE_ID_HEX_CHARS);
    CHECK(std::string(text) != id.to_hex());
  } catch (const switchyard::Error& e) {
    CHECK(e.status() == SY_ERR_COMMUNICATION);
    CHECK(contains(e.what(), "ncclGetUniqueId failed"));
  }
}

TEST_CASE("nccl: wrapping a NULL communicator is refused") {
  CHECK_THROWS_WITH_AS(NcclComm::wrap(nullptr),
                       doctest::Contains("NcclComm::wrap: comm is NULL; expected an ncclComm_t"),
                       switchyard::Error);
  sy_nccl_comm* comm = reinterpret_cast<sy_nccl_comm*>(uintptr_t{1});
  sy_error err = fresh_error();
  CHECK(sy_nccl_comm_wrap(nullptr, -1, &comm, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(comm == nullptr);
  CHECK(err.status == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "sy_nccl_comm_wrap: nccl_comm is NULL; expected an ncclComm_t "
                              "created by ncclCommInitRank or ncclCommInitAll"));
  CHECK(sy_nccl_comm_wrap(nullptr, -1, nullptr, nullptr) == SY_ERR_INVALID_ARGUMENT);

  char message[SY_ERROR_MESSAGE_BYTES];
  CHECK(nccl_c_wrap_null(message, sizeof message) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(message, "nccl_comm is NULL"));
}

TEST_CASE("nccl: C API argument checks") {
  char small[16];
  sy_error err = fresh_error();
  CHECK(sy_nccl_get_unique_id(small, sizeof small, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "capacity is 16 bytes; expected a buffer of at least 257 bytes"));

  sy_nccl_comm* comm = nullptr;
  err = fresh_error();
  CHECK(sy_nccl_comm_create_local(nullptr, 2, 0, &comm, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "unique_id_hex is NULL"));
  err = fresh_error();
  CHECK(sy_nccl_comm_create("xyz", 2, 0, 0, &comm, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "the text is 3 characters long"));
  err = fresh_error();
  const std::string id = random_id(4).to_hex();
  CHECK(sy_nccl_comm_create(id.c_str(), 2, 5, 0, &comm, &err) == SY_ERR_INVALID_ARGUMENT);
  CHECK(contains(err.message, "rank is 5; expected 0 <= rank < size (2)."));
  CHECK(comm == nullptr);

  // The NULL handle is harmless everywhere.
  sy_nccl_comm_destroy(nullptr);
  CHECK(sy_nccl_comm_get(nullptr) == nullptr);
  CHECK(sy_nccl_comm_native(nullptr) == nullptr);
  CHECK(sy_nccl_comm_collectives(nullptr) == 0);
  sy_nccl_comm_reset_counts(nullptr);
}

TEST_CASE("nccl: without a usable GPU, creating a communicator says so") {
  sy_nccl_comm* comm = nullptr;
  sy_error err = fresh_error();
  const std::string id = random_id(5).to_hex();
  // Device 64 does not exist on any machine this runs on; with no driver the failure is the
  // driver's. Either way: SY_ERR_UNAVAILABLE and a sentence, never a crash or a hang.
  CHECK(sy_nccl_comm_create(id.c_str(), 2, 0, 64, &comm, &err) == SY_ERR_UNAVAILABLE);
  CAPTURE(err.message);
  CHECK(contains(err.message, "NcclComm::create"));
  CHECK((contains(err.message, "CUDA device 64 does not exist") ||
         contains(err.message, "no usable CUDA device")));
  CHECK(comm == nullptr);
}
