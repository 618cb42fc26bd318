// Chunk loads and stores (chunk_io.hpp): 16-byte and element-wise access agree, stores round
// once to nearest even, and nothing is touched past the chunk's valid elements.
#include "chunk_io.hpp"

#include <switchyard/float16.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

namespace ap = switchyard::apex;

namespace {

float random_float(uint64_t& s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<float>(static_cast<double>(s >> 11) / 9007199254740992.0 * 20.0 - 10.0);
}

}  // namespace

TEST_CASE("bfloat16: vector and element-wise loads give the same floats; stores round once") {
  uint64_t s = 1;
  std::vector<__nv_bfloat16> buffer(16);
  std::vector<float> source(16);
  for (int k = 0; k < 16; ++k) {
    source[k] = random_float(s);
    buffer[k] = __float2bfloat16_rn(source[k]);
  }
  REQUIRE(reinterpret_cast<uintptr_t>(buffer.data()) % 16 == 0);
  float vector_values[8], scalar_values[8];
  ap::load_chunk(buffer.data() + 8, true, 8, vector_values);
  ap::load_chunk(buffer.data() + 8, false, 8, scalar_values);
  for (int k = 0; k < 8; ++k) {
    CHECK(vector_values[k] == scalar_values[k]);
    uint16_t bits;
    std::memcpy(&bits, &buffer[8 + k], 2);
    CHECK(vector_values[k] == sy::bf16_to_float(bits));
  }
  std::vector<__nv_bfloat16> out_vector(8), out_scalar(8);
  float values[8];
  for (float& v : values) v = random_float(s);
  ap::store_chunk(out_vector.data(), true, 8, values);
  ap::store_chunk(out_scalar.data(), false, 8, values);
  CHECK(std::memcmp(out_vector.data(), out_scalar.data(), 16) == 0);
  for (int k = 0; k < 8; ++k) {
    uint16_t bits;
    std::memcpy(&bits, &out_vector[k], 2);
    CHECK(bits == sy::float_to_bf16(values[k]));
  }
}

TEST_CASE("float16 and float32 round trips through packed chunks") {
  uint64_t s = 2;
  float values[8];
  for (float& v : values) v = random_float(s);
  std::vector<__half> half(8);
  ap::store_chunk(half.data(), true, 8, values);
  float back[8];
  ap::unpack(ap::load_packed(half.data(), true), back);
  for (int k = 0; k < 8; ++k) CHECK(back[k] == sy::f16_to_float(sy::float_to_f16(values[k])));
  std::vector<float> single(8);
  ap::store_chunk(single.data(), true, 8, values);
  ap::unpack(ap::load_packed(single.data(), false), back);
  for (int k = 0; k < 8; ++k) CHECK(back[k] == values[k]);
}

TEST_CASE("partial chunks: absent elements read as 0 and are never written") {
  std::vector<float> memory(8, 7.0f);
  float v[8];
  ap::load_chunk(memory.data(), false, 3, v);
  for (int k = 0; k < 8; ++k) CHECK(v[k] == (k < 3 ? 7.0f : 0.0f));
  const float out[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<__half> half(8, __float2half_rn(-1.0f));
  ap::store_chunk(half.data(), false, 5, out);
  for (int k = 0; k < 8; ++k) CHECK(__half2float(half[k]) == (k < 5 ? out[k] : -1.0f));
}

TEST_CASE("weights: run-time dtype, zero-centred gamma, absent weight and bias") {
  std::vector<__nv_bfloat16> gamma(8);
  for (int k = 0; k < 8; ++k) gamma[k] = __float2bfloat16_rn(0.25f * k);
  float g[8];
  ap::load_gamma(gamma.data(), ap::Dtype::BF16, true, 0, true, 8, g);
  for (int k = 0; k < 8; ++k) CHECK(g[k] == 1.0f + 0.25f * k);
  ap::load_gamma(nullptr, ap::Dtype::BF16, true, 0, true, 8, g);
  for (float e : g) CHECK(e == 1.0f);
  float b[8];
  ap::load_beta(nullptr, ap::Dtype::F32, 0, true, 8, b);
  for (float e : b) CHECK(e == 0.0f);
  std::vector<float> beta = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  ap::load_beta(beta.data(), ap::Dtype::F32, 8, true, 8, b);
  for (int k = 0; k < 8; ++k) CHECK(b[k] == 9.0f + k);
}
