// The wire format of isolated loading; see plugin_info_wire.hpp.
#include "plugin_info_wire.hpp"

#include "host_services.hpp"

#include <cstdint>
#include <utility>

namespace switchyard::detail {
namespace {

constexpr char kMagic[] = "SYPI1";

class Writer {
 public:
  void number(std::int64_t value) {
    auto bits = static_cast<std::uint64_t>(value);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
  }
  void text(const std::string& value) {
    number(static_cast<std::int64_t>(value.size()));
    out_ += value;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  bool number(std::int64_t* value) {
    if (in_.size() - position_ < 8) return false;
    std::uint64_t bits = 0;
    for (int i = 0; i < 8; ++i)
      bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[position_ + i])) << (8 * i);
    position_ += 8;
    *value = static_cast<std::int64_t>(bits);
    return true;
  }
  template <class T>
  bool number_as(T* value) {
    std::int64_t wide = 0;
    if (!number(&wide)) return false;
    *value = static_cast<T>(wide);
    return true;
  }
  bool text(std::string* value) {
    std::int64_t size = 0;
    if (!number(&size) || size < 0 || static_cast<std::uint64_t>(size) > in_.size() - position_)
      return false;
    value->assign(in_, position_, static_cast<std::size_t>(size));
    position_ += static_cast<std::size_t>(size);
    return true;
  }
  bool at_end() const { return position_ == in_.size(); }

 private:
  const std::string& in_;
  std::size_t position_ = 0;
};

void write_family(Writer& out, const FamilyInfo& family) {
  out.number(family.offered ? 1 : 0);
  out.number(family.dtypes);
  out.number(family.devices);
  out.number(family.features);
  out.number(family.determinism);
  out.number(family.table_struct_size);
}

bool read_family(Reader& in, FamilyInfo* family) {
  std::int64_t offered = 0;
  if (!in.number(&offered)) return false;
  family->offered = offered != 0;
  return in.number_as(&family->dtypes) && in.number_as(&family->devices) &&
         in.number_as(&family->features) && in.number_as(&family->determinism) &&
         in.number_as(&family->table_struct_size);
}

}  // namespace

std::string serialize_plugin_info(const PluginInfo& info) {
  Writer out;
  out.text(kMagic);
  for (const std::string* text : {&info.path, &info.file_name, &info.name, &info.version,
                                  &info.vendor, &info.description, &info.build_info})
    out.text(*text);
  out.number(info.abi_major);
  out.number(info.abi_minor);
  out.number(info.descriptor_struct_size);
  out.number(static_cast<std::int64_t>(info.state));
  out.text(info.reason);
  out.number(static_cast<std::int64_t>(info.log.size()));
  for (const std::string& line : info.log) out.text(line);
  write_family(out, info.cross_entropy);
  write_family(out, info.norm);
  return out.take();
}

bool deserialize_plugin_info(const std::string& bytes, PluginInfo* info) {
  Reader in(bytes);
  std::string magic;
  if (!in.text(&magic) || magic != kMagic) return false;
  PluginInfo read;
  for (std::string* text : {&read.path, &read.file_name, &read.name, &read.version,
                            &read.vendor, &read.description, &read.build_info}) {
    if (!in.text(text)) return false;
  }
  std::int64_t state = 0, lines = 0;
  if (!in.number_as(&read.abi_major) || !in.number_as(&read.abi_minor) ||
      !in.number_as(&read.descriptor_struct_size) || !in.number(&state) ||
      !in.text(&read.reason) || !in.number(&lines)) {
    return false;
  }
  if (state < static_cast<std::int64_t>(PluginState::Ok) ||
      state > static_cast<std::int64_t>(PluginState::Disabled) || lines < 0 ||
      static_cast<std::size_t>(lines) > kMaxCapturedLogLines) {
    return false;
  }
  read.state = static_cast<PluginState>(state);
  read.log.resize(static_cast<std::size_t>(lines));
  for (std::string& line : read.log) {
    if (!in.text(&line)) return false;
  }
  if (!read_family(in, &read.cross_entropy) || !read_family(in, &read.norm) || !in.at_end())
    return false;
  *info = std::move(read);
  return true;
}

}  // namespace switchyard::detail
