# Compiles Liger-Kernel 0.8.5's LayerNorm forward kernel (_layer_norm_forward_kernel in
# liger_kernel/ops/layer_norm.py, read from the package's wheel, not copied here) for sm_90 with
# Triton 3.4.0 on a machine without a GPU, as the bench runs it at [16384, 4096] bf16
# (BLOCK_SIZE 4096, num_warps 8 from its calculate_settings), and writes the cubin to /tmp.
#   python3 -m venv v && v/bin/pip install triton==3.4.0
#   pip download --no-deps liger-kernel==0.8.5 -d /tmp/liger && cd /tmp/liger && unzip -o *.whl
#   v/bin/python liger_ln_forward_sass.py /tmp/liger/liger_kernel/ops/layer_norm.py
#   cuobjdump --dump-resource-usage /tmp/ln_liger.cubin; cuobjdump -sass /tmp/ln_liger.cubin
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.language.extra.cuda.libdevice import rsqrt

source = open(sys.argv[1]).read()
start = source.index("@triton.jit\ndef _layer_norm_forward_kernel(")
end = source.index("@triton.jit", start + 1)
module = {"triton": triton, "tl": tl, "rsqrt": rsqrt}
exec(compile(source[start:end], sys.argv[1], "exec"), module)
kernel = module["_layer_norm_forward_kernel"]

signature = {"Y_ptr": "*bf16", "Y_row_stride": "i32", "X_ptr": "*bf16", "X_row_stride": "i32",
             "W_ptr": "*bf16", "W_row_stride": "i32", "B_ptr": "*bf16", "B_row_stride": "i32",
             "Mean_ptr": "*fp32", "Mean_row_stride": "i32", "RSTD_ptr": "*fp32",
             "RSTD_row_stride": "i32", "n_cols": "i32", "eps": "fp32", "BLOCK_SIZE": "constexpr"}
# What Triton's launcher specializes for PyTorch's contiguous tensors: pointers and the row
# strides and n_cols (4096) divisible by 16, the unit strides constant.
divisible = [0, 1, 2, 3, 4, 6, 8, 10, 12]
source = ASTSource(fn=kernel, signature=signature,
                   constexprs={"BLOCK_SIZE": 4096, "W_row_stride": 1, "B_row_stride": 1,
                               "Mean_row_stride": 1, "RSTD_row_stride": 1},
                   attrs={(i,): [["tt.divisibility", 16]] for i in divisible})
compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
open("/tmp/ln_liger.cubin", "wb").write(compiled.asm["cubin"])
print("shared", compiled.metadata.shared)
