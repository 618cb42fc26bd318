#include "kernel_args.hpp"

#include <cstddef>

namespace switchyard::fused::jit {
namespace {

template <class Struct>
void declare(std::string& out, const char* device_name,
             std::initializer_list<std::pair<const char*, const char*>> fields,
             std::initializer_list<size_t> offsets) {
  out += "struct ";
  out += device_name;
  out += " {\n";
  for (const auto& [type, name] : fields) out += std::string("  ") + type + " " + name + ";\n";
  out += "};\n";
  auto offset = offsets.begin();
  for (const auto& field : fields) {
    out += std::string("static_assert(__builtin_offsetof(") + device_name + ", " + field.second +
           ") == " + std::to_string(*offset++) + ", \"host/device layout of " + device_name +
           "::" + field.second + " differs\");\n";
  }
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
