// Session 20 microbenchmark: the bf16 norm forward at [16384, H] as plain one-row blocks
// (Liger-Kernel's shape: no ring, the row loaded straight into registers) against a copy.
#include <cuda_bf16.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

constexpr float kEps = 1e-5f;
template <bool CS> __device__ __forceinline__ uint4 ld(const uint4* p) { if constexpr (CS) return __ldcs(p); else return __ldg(p); }
template <bool CS> __device__ __forceinline__ void st(uint4* p, uint4 v) { if constexpr (CS) __stcs(p, v); else *p = v; }

__device__ __forceinline__ void unpack(uint4 u, float* f) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) { float2 t = __bfloat1622float2(h[i]); f[2*i] = t.x; f[2*i+1] = t.y; }
}
__device__ __forceinline__ uint4 pack(const float* f) {
  uint4 u; __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2*i], f[2*i+1]);
  return u;
}

// LAYER: LayerNorm (mean, M2 merged with equal shares) else RMS (sum of squares).
// RPB rows a block, all loaded before any is reduced. PERSIST: grid-stride with the next row
// prefetched into registers.
template <int T, int EPT, bool LAYER, int RPB, bool CS, int MINB>
__global__ void __launch_bounds__(T, MINB) fwd(const uint4* __restrict__ x, const uint4* __restrict__ g,
    const uint4* __restrict__ b, uint4* __restrict__ y, float* __restrict__ mean_out,
    float* __restrict__ rstd_out, int rows, int H) {
  constexpr int C = EPT / 8;  // chunks a thread
  constexpr int W = T / 32;
  __shared__ float2 red[RPB][W];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int row0 = blockIdx.x * RPB;
  const int cpr = H / 8;  // chunks a row
  uint4 raw[RPB][C];
#pragma unroll
  for (int r = 0; r < RPB; ++r)
#pragma unroll
    for (int c = 0; c < C; ++c) raw[r][c] = ld<CS>(x + (size_t)(row0 + r) * cpr + c * T + t);
  float v[RPB][EPT];
#pragma unroll
  for (int r = 0; r < RPB; ++r)
#pragma unroll
    for (int c = 0; c < C; ++c) unpack(raw[r][c], &v[r][c * 8]);
  float2 st2[RPB];
#pragma unroll
  for (int r = 0; r < RPB; ++r) {
    if constexpr (LAYER) {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < EPT; ++i) s += v[r][i];
      float m = s * (1.f / EPT), m2 = 0.f;
#pragma unroll
      for (int i = 0; i < EPT; ++i) { float d = v[r][i] - m; m2 = fmaf(d, d, m2); }
      float n = EPT;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        float om = __shfl_xor_sync(~0u, m, o), om2 = __shfl_xor_sync(~0u, m2, o);
        float d = om - m; m = 0.5f * (m + om); m2 = m2 + om2 + d * d * (0.5f * n); n *= 2.f;
      }
      st2[r] = make_float2(m, m2);
    } else {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < EPT; ++i) s = fmaf(v[r][i], v[r][i], s);
#pragma unroll
      for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
      st2[r] = make_float2(s, 0.f);
    }
    if (lane == 0) red[r][warp] = st2[r];
  }
  __syncthreads();
  float gf[EPT], bf[EPT];
#pragma unroll
  for (int c = 0; c < C; ++c) { unpack(__ldg(g + c * T + t), &gf[c * 8]); if (LAYER) unpack(__ldg(b + c * T + t), &bf[c * 8]); }
#pragma unroll
  for (int r = 0; r < RPB; ++r) {
    float mean = 0.f, rstd;
    if constexpr (LAYER) {
      float m = red[r][0].x, m2 = red[r][0].y, n = 32.f * EPT;
#pragma unroll
      for (int w = 1; w < W; ++w) {  // equal counts: running share 1/(w+1)
        float om = red[r][w].x, om2 = red[r][w].y, d = om - m, f = 1.f / (w + 1);
        m = m + d * f; m2 = m2 + om2 + d * d * n * f; n += 32.f * EPT;
      }
      mean = m; rstd = rsqrtf(m2 / H + kEps);
    } else {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < W; ++w) s += red[r][w].x;
      rstd = rsqrtf(s / H + kEps);
    }
    const int row = row0 + r;
    if (t == 0) { if (LAYER) mean_out[row] = mean; rstd_out[row] = rstd; }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      float o[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] = LAYER ? fmaf((v[r][c*8+i] - mean) * rstd, gf[c*8+i], bf[c*8+i]) : v[r][c*8+i] * rstd * gf[c*8+i];
      st<CS>(y + (size_t)row * cpr + c * T + t, pack(o));
    }
  }
}

// Persistent: grid-stride over rows, next row's raw chunks loaded before this row is reduced.
template <int T, int EPT, bool LAYER, bool CS, int MINB>
__global__ void __launch_bounds__(T, MINB) fwd_persist(const uint4* __restrict__ x, const uint4* __restrict__ g,
    const uint4* __restrict__ b, uint4* __restrict__ y, float* __restrict__ mean_out,
    float* __restrict__ rstd_out, int rows, int H) {
  constexpr int C = EPT / 8, W = T / 32;
  __shared__ float2 red[2][W];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5, cpr = H / 8;
  float gf[EPT], bf[EPT];
#pragma unroll
  for (int c = 0; c < C; ++c) { unpack(__ldg(g + c * T + t), &gf[c * 8]); if (LAYER) unpack(__ldg(b + c * T + t), &bf[c * 8]); }
  int row = blockIdx.x;
  uint4 nxt[C];
#pragma unroll
  for (int c = 0; c < C; ++c) nxt[c] = row < rows ? ld<CS>(x + (size_t)row * cpr + c * T + t) : make_uint4(0,0,0,0);
  int par = 0;
  for (; row < rows; row += gridDim.x, par ^= 1) {
    float v[EPT];
#pragma unroll
    for (int c = 0; c < C; ++c) unpack(nxt[c], &v[c * 8]);
    const int nr = row + gridDim.x;
    if (nr < rows) {
#pragma unroll
      for (int c = 0; c < C; ++c) nxt[c] = ld<CS>(x + (size_t)nr * cpr + c * T + t);
    }
    float2 s2;
    if constexpr (LAYER) {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < EPT; ++i) s += v[i];
      float m = s * (1.f / EPT), m2 = 0.f;
#pragma unroll
      for (int i = 0; i < EPT; ++i) { float d = v[i] - m; m2 = fmaf(d, d, m2); }
      float n = EPT;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        float om = __shfl_xor_sync(~0u, m, o), om2 = __shfl_xor_sync(~0u, m2, o);
        float d = om - m; m = 0.5f * (m + om); m2 = m2 + om2 + d * d * (0.5f * n); n *= 2.f;
      }
      s2 = make_float2(m, m2);
    } else {
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < EPT; ++i) s = fmaf(v[i], v[i], s);
#pragma unroll
      for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
      s2 = make_float2(s, 0.f);
    }
    if (lane == 0) red[par][warp] = s2;
    __syncthreads();
    float mean = 0.f, rstd;
    if constexpr (LAYER) {
      float m = red[par][0].x, m2 = red[par][0].y, n = 32.f * EPT;
#pragma unroll
      for (int w = 1; w < W; ++w) {
        float om = red[par][w].x, om2 = red[par][w].y, d = om - m, f = 1.f / (w + 1);
        m = m + d * f; m2 = m2 + om2 + d * d * n * f; n += 32.f * EPT;
      }
      mean = m; rstd = rsqrtf(m2 / H + kEps);
    } else {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < W; ++w) s += red[par][w].x;
      rstd = rsqrtf(s / H + kEps);
    }
    if (t == 0) { if (LAYER) mean_out[row] = mean; rstd_out[row] = rstd; }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      float o[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) o[i] = LAYER ? fmaf((v[c*8+i] - mean) * rstd, gf[c*8+i], bf[c*8+i]) : v[c*8+i] * rstd * gf[c*8+i];
      st<CS>(y + (size_t)row * cpr + c * T + t, pack(o));
    }
  }
}

template <int T, bool CS>
__global__ void __launch_bounds__(T) copy_rows(const uint4* __restrict__ x, uint4* __restrict__ y, int H) {
  const int cpr = H / 8;
  for (int c = threadIdx.x; c < cpr; c += T) st<CS>(y + (size_t)blockIdx.x * cpr + c, ld<CS>(x + (size_t)blockIdx.x * cpr + c));
}

struct Bufs { uint4 *x, *g, *b, *y; float *mean, *rstd; int rows, H; };

template <class F> float time_ms(F f, int reps, void* flush, size_t flush_bytes) {
  cudaEvent_t a, z; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&z));
  std::vector<float> ts;
  for (int i = 0; i < reps + 3; ++i) {
    CK(cudaMemsetAsync(flush, i, flush_bytes));  // evicts the L2
    CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(z)); CK(cudaEventSynchronize(z));
    float ms; CK(cudaEventElapsedTime(&ms, a, z)); if (i >= 3) ts.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

static float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

double check(const Bufs& B, bool layer) {
  const int n = 64; size_t cpr = B.H / 8;
  std::vector<uint16_t> x(n * B.H), y(n * B.H), g(B.H), b(B.H);
  int stride = B.rows / n;
  for (int r = 0; r < n; ++r) {
    CK(cudaMemcpy(&x[r * B.H], B.x + r * stride * cpr, B.H * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&y[r * B.H], B.y + r * stride * cpr, B.H * 2, cudaMemcpyDeviceToHost));
  }
  CK(cudaMemcpy(g.data(), B.g, B.H * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(b.data(), B.b, B.H * 2, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int r = 0; r < n; ++r) {
    double s = 0, ss = 0;
    for (int i = 0; i < B.H; ++i) { double v = bf2f(x[r * B.H + i]); s += v; ss += v * v; }
    double mean = layer ? s / B.H : 0, var = layer ? ss / B.H - mean * mean : ss / B.H;
    double rstd = 1 / sqrt(var + kEps);
    for (int i = 0; i < B.H; ++i) {
      double ref = (bf2f(x[r * B.H + i]) - mean) * rstd * bf2f(g[i]) + (layer ? bf2f(b[i]) : 0);
      worst = std::max(worst, fabs(ref - bf2f(y[r * B.H + i])) / (1 + fabs(ref)));
    }
  }
  return worst;
}

__global__ void fill(uint16_t* p, size_t n, uint32_t seed, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 15; h *= 2246822519u; h ^= h >> 13;
    float f = lo + (hi - lo) * (h & 0xffffff) / 16777216.f;
    __nv_bfloat16 v = __float2bfloat16(f); p[i] = *reinterpret_cast<uint16_t*>(&v);
  }
}

int main(int argc, char** argv) {
  const int rows = 16384; const int reps = 30;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  size_t flush_bytes = 256ull << 20; void* flush; CK(cudaMalloc(&flush, flush_bytes));
  for (int H : {4096, 8192}) {
    Bufs B{}; B.rows = rows; B.H = H; size_t n = (size_t)rows * H;
    CK(cudaMalloc(&B.x, n * 2)); CK(cudaMalloc(&B.y, n * 2)); CK(cudaMalloc(&B.g, H * 2)); CK(cudaMalloc(&B.b, H * 2));
    CK(cudaMalloc(&B.mean, rows * 4)); CK(cudaMalloc(&B.rstd, rows * 4));
    fill<<<1024, 256>>>((uint16_t*)B.x, n, 1, -2.f, 3.f); fill<<<8, 256>>>((uint16_t*)B.g, H, 2, 0.5f, 1.5f); fill<<<8, 256>>>((uint16_t*)B.b, H, 3, -0.5f, 0.5f);
    CK(cudaDeviceSynchronize());
    double floor_ms = time_ms([&] { CK(cudaMemcpyAsync(B.y, B.x, n * 2, cudaMemcpyDeviceToDevice)); }, reps, flush, flush_bytes);
    printf("H %d memcpy %.4f ms (%.1f GB/s)\n", H, floor_ms, 2.0 * n * 2 / floor_ms / 1e6);
    auto run = [&](const char* name, auto kern, int threads, int grid, bool layer) {
      int occ = 0; CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern, threads, 0));
      cudaFuncAttributes at; CK(cudaFuncGetAttributes(&at, kern));
      if (grid == 0) grid = occ * sms;
      CK(cudaMemset(B.y, 0xff, n * 2));
      float ms = time_ms([&] { kern<<<grid, threads>>>(B.x, B.g, B.b, B.y, B.mean, B.rstd, rows, H); }, reps, flush, flush_bytes);
      printf("H %d %-5s %-28s %.4f ms  x memcpy %.3f  regs %d  blocks/SM %d  err %.2e\n", H, layer ? "LN" : "RMS", name, ms, ms / floor_ms, at.numRegs, occ, check(B, layer));
    };
    {
      auto k = copy_rows<256, false>; CK(cudaMemset(B.y, 0, n * 2));
      float ms = time_ms([&] { k<<<rows, 256>>>(B.x, B.y, H); }, reps, flush, flush_bytes);
      auto k2 = copy_rows<256, true>;
      float ms2 = time_ms([&] { k2<<<rows, 256>>>(B.x, B.y, H); }, reps, flush, flush_bytes);
      printf("H %d copy_rows 256 %.4f ms, streaming hints %.4f ms\n", H, ms, ms2);
    }
    for (int layer = 1; layer >= 0; --layer) {
#define ROWK(T, EPT, RPB, CS, MINB) \
      if (EPT * T == H) { \
        if (layer) run("rows T" #T " e" #EPT " r" #RPB " cs" #CS " minb" #MINB, fwd<T, EPT, true, RPB, CS, MINB>, T, rows / RPB, true); \
        else run("rows T" #T " e" #EPT " r" #RPB " cs" #CS " minb" #MINB, fwd<T, EPT, false, RPB, CS, MINB>, T, rows / RPB, false); }
#define PERK(T, EPT, CS, MINB) \
      if (EPT * T == H) { \
        if (layer) run("persist T" #T " e" #EPT " cs" #CS " minb" #MINB, fwd_persist<T, EPT, true, CS, MINB>, T, 0, true); \
        else run("persist T" #T " e" #EPT " cs" #CS " minb" #MINB, fwd_persist<T, EPT, false, CS, MINB>, T, 0, false); }
      ROWK(256, 16, 1, false, 1) ROWK(256, 16, 1, true, 1) ROWK(512, 8, 1, false, 1) ROWK(512, 8, 1, true, 1)
      ROWK(128, 32, 1, false, 1) ROWK(128, 32, 1, true, 1) ROWK(256, 16, 2, false, 1) ROWK(256, 16, 2, true, 1)
      ROWK(1024, 8, 1, false, 1) ROWK(1024, 8, 1, true, 1) ROWK(512, 16, 1, false, 1) ROWK(512, 16, 1, true, 1)
      ROWK(256, 32, 1, false, 1) ROWK(256, 32, 1, true, 1) ROWK(512, 16, 2, true, 1) ROWK(1024, 8, 2, true, 1)
      PERK(256, 16, false, 1) PERK(256, 16, true, 1) PERK(512, 8, true, 1) PERK(128, 32, true, 1)
      PERK(512, 16, true, 1) PERK(1024, 8, true, 1) PERK(256, 32, true, 1)
    }
    cudaFree(B.x); cudaFree(B.y); cudaFree(B.g); cudaFree(B.b); cudaFree(B.mean); cudaFree(B.rstd);
  }
  return 0;
}
