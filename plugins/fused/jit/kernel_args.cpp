#include "kernel_args.hpp"

#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <utility>

namespace switchyard::fused::jit {
namespace {

// NVRTC has no offsetof, so the device side checks what pins the layout instead: every field
// is 8 bytes and the struct is exactly 8 bytes per field (so no padding anywhere, fields in
// declaration order). The host side checks the same of its offsets here.
template <class Struct>
void declare(std::string& out, const char* device_name,
             std::initializer_list<std::pair<const char*, const char*>> fields,
             std::initializer_list<size_t> offsets) {
  size_t index = 0;
  for (size_t offset : offsets)
    if (offset != 8 * index++)
      throw std::logic_error(std::string(device_name) + ": a field is not 8 bytes wide");
  static_assert(alignof(Struct) == 8, "8-byte fields only");
  if (sizeof(Struct) != 8 * fields.size())
    throw std::logic_error(std::string(device_name) + ": padding in the kernel argument struct");
  out += "struct ";
  out += device_name;
  out += " {\n";
  for (const auto& [type, name] : fields) out += std::string("  ") + type + " " + name + ";\n";
  out += "};\n";
  for (const auto& field : fields)
    out += std::string("static_assert(sizeof(") + device_name + "::" + field.second +
           ") == 8, \"" + device_name + "::" + field.second + " must be 8 bytes, as on the host\");\n";
  out += std::string("static_assert(sizeof(") + device_name + ") == " +
         std::to_string(sizeof(Struct)) + ", \"host/device size of " + device_name +
         " differs\");\n";
}

}  // namespace

std::string kernel_args_source() {
#define SY_FIELD_TEXT(type, name) {#type, #name},
#define SY_CE_OFFSET(type, name) offsetof(CeKernelArgs, name),
#define SY_NORM_OFFSET(type, name) offsetof(NormKernelArgs, name),
  std::string out;
  declare<CeKernelArgs>(out, "SyCeArgs", {SY_CE_KERNEL_ARGS(SY_FIELD_TEXT)},
                        {SY_CE_KERNEL_ARGS(SY_CE_OFFSET)});
  declare<NormKernelArgs>(out, "SyNormArgs", {SY_NORM_KERNEL_ARGS(SY_FIELD_TEXT)},
                          {SY_NORM_KERNEL_ARGS(SY_NORM_OFFSET)});
#undef SY_FIELD_TEXT
#undef SY_CE_OFFSET
#undef SY_NORM_OFFSET
  return out;
}

}  // namespace switchyard::fused::jit
