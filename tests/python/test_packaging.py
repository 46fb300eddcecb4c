"""The Python package and the CMake library are built from the same sources and carry one version.
Needs neither PyTorch nor a GPU: it reads the build files."""
import glob
import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def read(path):
    with open(os.path.join(REPO, path)) as f:
        return f.read()


def test_one_version_everywhere():
    cmake = re.search(r"project\(inorm VERSION (\S+)", read("CMakeLists.txt")).group(1)
    pyproject = re.search(r'^version = "([^"]+)"', read("pyproject.toml"), re.M).group(1)
    package = re.search(r'^__version__ = "([^"]+)"', read("python/inorm/__init__.py"), re.M).group(1)
    assert cmake == pyproject == package


def test_extension_compiles_exactly_the_cmake_library_sources():
    # setup.py globs every .cpp and .cu under src/; CMake lists the files: a kernel added to one
    # build must be in the other.
    cmake_sources = re.search(r"add_library\(inorm\s+([^)]*)\)", read("CMakeLists.txt")).group(1).split()
    globbed = [os.path.relpath(p, REPO) for pattern in ("src/**/*.cpp", "src/**/*.cu")
               for p in glob.glob(os.path.join(REPO, pattern), recursive=True)]
    assert sorted(cmake_sources) == sorted(globbed)
