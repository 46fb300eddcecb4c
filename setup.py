# Builds the PyTorch extension inorm._C with PyTorch's own extension machinery, from the same
# library sources CMake builds (src/): pip install --no-build-isolation .
import glob
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

# inorm's kernels use Hopper features; an explicit -gencode makes torch ignore TORCH_CUDA_ARCH_LIST.
arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST", "9.0")
if arch_list.replace("+PTX", "").strip() not in ("9.0", "9.0a"):
    raise SystemExit(f"inorm builds for sm_90 (Hopper) only; TORCH_CUDA_ARCH_LIST={arch_list!r}: set it to 9.0")

# Every .cpp and .cu file under src/ (tests/python/test_packaging.py checks CMake lists the same).
library_sources = sorted(glob.glob("src/**/*.cpp", recursive=True) + glob.glob("src/**/*.cu", recursive=True))

setup(
    ext_modules=[
        CUDAExtension(
            name="inorm._C",
            sources=["python/csrc/ops.cpp", *library_sources],
            include_dirs=[os.path.abspath("include"), os.path.abspath("src")],
            extra_compile_args={
                "cxx": ["-O3", "-std=c++17"],
                "nvcc": ["-O3", "-std=c++17", "-lineinfo", "-gencode=arch=compute_90,code=sm_90"],
            },
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
