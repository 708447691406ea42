# -*- Python -*-
# lit configuration of the affine-ucp test suite.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "AFFINE-UCP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "unit", "gpu", "fakecuda", "fuzz", "CMakeLists.txt",
                   "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ucp_obj_root, "test")

llvm_config.use_default_substitutions()
# The Python CMake found (Debian's), ahead of lit's default (the one running
# lit), so that tests and the feature checks below use the same one.
config.substitutions.insert(0, ("%python", config.python_executable))
config.substitutions.append(("%ucp_obj_root", config.ucp_obj_root))
config.substitutions.append(("%ucp_src_root", os.path.dirname(config.test_source_root)))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(
    ("%examples", os.path.join(os.path.dirname(config.test_source_root), "examples")))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["affine-opt", "affine-translate", "affine-run", "ucp-gpu-check",
     "ucp-make-deepspeed-checkpoint"],
    [config.ucp_tools_dir])
# Stand-ins for libcuda.so.1 and libnvrtc.so that run kernels on the host.
config.substitutions.append(
    ("%fake_cuda", os.path.join(config.ucp_obj_root, "test", "fakecuda", "lib")))

# The fuzz targets, their committed corpus and regression inputs; built
# against libFuzzer (feature `libfuzzer`) in the clang sanitizer build.
config.substitutions.append(
    ("%fuzz_bin", os.path.join(config.ucp_obj_root, "test", "fuzz")))
config.substitutions.append(
    ("%fuzz_src", os.path.join(config.test_source_root, "fuzz")))
if config.ucp_libfuzzer:
    config.available_features.add("libfuzzer")

# Debian's stock mlir-opt, and the plugins for it (not in the sanitizer
# build).
stock_mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
config.substitutions.append(("%stock_mlir_opt", stock_mlir_opt))
plugins = os.path.join(config.ucp_obj_root, "lib", "plugins")
if os.path.exists(os.path.join(plugins, "UCPPassPlugin.so")) and \
        os.path.exists(stock_mlir_opt):
    config.available_features.add("ucp-plugins")
    config.substitutions.append(("%ucp_plugins", plugins))

# An out-of-tree project built on the installed package (the release
# build's: the sanitizer build's libraries need its runtime).
if not config.ucp_sanitize:
    config.available_features.add("find-package")
    config.substitutions.append(("%cmake", config.cmake_command))
    config.substitutions.append(("%cxx", config.cxx_compiler))
    config.substitutions.append(("%cc", config.c_compiler))
    config.substitutions.append(
        ("%mlir_includes",
         " ".join("-I" + d for d in config.mlir_include_dirs)))

# The Python package of this build (not in the sanitizer build), and MLIR's
# CPU runner with its support libraries.
python_package = os.path.join(config.ucp_obj_root, "python")
if os.path.exists(os.path.join(python_package, "affine_ucp", "__init__.py")):
    config.available_features.add("ucp-python")
    config.substitutions.append(("%ucp_python", python_package))
cpu_runner = os.path.join(config.llvm_tools_dir, "mlir-cpu-runner")
if os.path.exists(cpu_runner):
    config.available_features.add("mlir-cpu-runner")
    config.substitutions.append(("%mlir_cpu_runner", cpu_runner))
    config.substitutions.append(
        ("%mlir_runner_libs",
         os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")))

# PNG pictures: built where librsvg was found.
if config.ucp_png:
    config.available_features.add("png")

# Transfers across processes: built where MPI was found, run by mpirun on
# this host (processes may outnumber cores; CI runs as root).
# In the sanitizer build LeakSanitizer is off under MPI (%mpi_env): Open MPI keeps
# its allocations to the end by design, in components it has unloaded by
# then (no stack to suppress them by); ASan and UBSan still check all.
mpirun = shutil.which("mpirun")
if config.ucp_mpi and mpirun:
    config.available_features.add("mpi")
    mpi_env = ("env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:"
               "allow_user_poisoning=0 " if config.ucp_sanitize else "")
    config.substitutions.append(
        ("%mpirun", mpi_env + mpirun + " --oversubscribe --allow-run-as-root"))
    config.substitutions.append(("%mpi_env", mpi_env))
    if subprocess.run([config.python_executable, "-c", "import mpi4py"],
                      capture_output=True).returncode == 0:
        config.available_features.add("mpi4py")
    for tool in ["ucp-mpi-check", "ucp-mpi-progress", "ucp-node-local"]:
        config.substitutions.append(
            ("%" + tool[4:].replace("-", "_"),
             os.path.join(config.ucp_tools_dir, tool)))

# Optional hardware and tools: tests that need them say REQUIRES.
copy_bench = os.path.join(config.ucp_obj_root, "bench", "ucp-copy-bench")
if os.path.exists(copy_bench):  # built where libtorch and Google Benchmark are
    config.available_features.add("copy-bench")
    config.substitutions.append(("%copy_bench", copy_bench))
nvcc = os.path.join(config.cuda_root, "bin", "nvcc")
if os.path.exists(nvcc):
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", nvcc))
if shutil.which("nvidia-smi"):
    try:
        if subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                          timeout=20).returncode == 0:
            config.available_features.add("cuda-gpu")
    except (OSError, subprocess.TimeoutExpired):
        pass

# The ASan + UBSan build (scripts/test --sanitize): tests that bound a
# tool's memory cannot run there (ASan reserves terabytes of shadow), and
# LeakSanitizer cannot run under a tracer, so traced runs turn it off.
if config.ucp_sanitize:
    config.available_features.add("sanitize")
    config.substitutions.append(
        ("%untraced_leaks",
         "env ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allow_user_poisoning=0"))
else:
    config.substitutions.append(("%untraced_leaks", ""))

# Tests of the system calls a run makes trace it, where tracing works.
# The build under test is the one scripts/build makes in this checkout
# (build/, or build-sanitize/ with --sanitize), so a test may run it.
source_root = os.path.dirname(config.test_source_root)
build_flags = "--sanitize" if config.ucp_sanitize else ""
in_tree_build = os.path.join(
    source_root, "build-sanitize" if config.ucp_sanitize else "build")
if os.path.realpath(config.ucp_obj_root) == os.path.realpath(in_tree_build):
    config.available_features.add("in-tree-build")
    config.substitutions.append(("%ucp_build_flags", build_flags))


def can_strace():
    try:
        return subprocess.run(["strace", "-o", os.devnull, "true"],
                              capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if can_strace():
    config.available_features.add("strace")

# Tests that fill a small file system mount a tmpfs: possible as root with
# the capability to mount.
def can_mount_tmpfs():
    import tempfile
    try:
        folder = tempfile.mkdtemp()
    except OSError:
        return False
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", folder],
            capture_output=True, timeout=20).returncode == 0
        if mounted:
            mounted = subprocess.run(["umount", folder], capture_output=True,
                                     timeout=20).returncode == 0
        return mounted
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        try:
            os.rmdir(folder)
        except OSError:
            pass


if can_mount_tmpfs():
    config.available_features.add("tmpfs")


# Tests of outputs that are device nodes make one with mknod: possible as
# root where the container allows it.
def can_mknod():
    import tempfile
    folder = tempfile.mkdtemp()
    node = os.path.join(folder, "null")
    try:
        return subprocess.run(["mknod", node, "c", "1", "3"],
                              capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        try:
            os.remove(node)
        except OSError:
            pass
        os.rmdir(folder)


if can_mknod():
    config.available_features.add("mknod")


# torch in the Python the tests run with: tests that compare with
# torch.load need it.
def has_python_module(name):
    try:
        return subprocess.run([config.python_executable, "-c", "import " + name],
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if has_python_module("torch"):
    config.available_features.add("torch")

# Real DeepSpeed checkpoints and DeepSpeed's own conversions of them, in the
# shared fixtures beside a development checkout (or where
# UCP_DEEPSPEED_FIXTURES points): tests that read them say REQUIRES.
deepspeed_fixtures = os.environ.get(
    "UCP_DEEPSPEED_FIXTURES",
    os.path.join(os.path.dirname(config.test_source_root),
                 "..", "shared", "fixtures"))
if os.path.isdir(os.path.join(deepspeed_fixtures, "deepspeed")):
    config.available_features.add("deepspeed-fixtures")
    config.substitutions.append(
        ("%deepspeed_fixtures", os.path.abspath(deepspeed_fixtures)))

# What each optional feature a test may REQUIRE needs, for the report of
# skipped tests at the end of scripts/test (scripts/report-skipped): written
# where the build's tests are, one line per feature this machine lacks.
FEATURE_NEEDS = {
    "deepspeed-fixtures": "the real DeepSpeed checkpoints: set "
        "UCP_DEEPSPEED_FIXTURES to the folder that holds deepspeed/ (a "
        "development checkout finds them in ../shared/fixtures)",
    "torch": "torch for " + config.python_executable
        + " (apt-get install python3-torch)",
    "nvcc": "CUDA's nvcc in " + config.cuda_root + "/bin",
    "cuda-gpu": "a CUDA GPU (nvidia-smi -L)",
    "mpi": "Open MPI, found when the build was configured "
        "(apt-get install libopenmpi-dev openmpi-bin)",
    "mpi4py": "mpi4py (apt-get install python3-mpi4py)",
    "libfuzzer": "the sanitizer build (scripts/test --sanitize)",
    "copy-bench": "ucp-copy-bench, built where libtorch and Google "
        "Benchmark are",
    "ucp-plugins": "the plugins for stock mlir-opt (not built with the "
        "sanitizers)",
    "find-package": "the release build (the sanitizer build's libraries "
        "need its runtime)",
    "ucp-python": "the Python package (built with pybind11-dev, not in the "
        "sanitizer build)",
    "mlir-cpu-runner": "MLIR's mlir-cpu-runner in " + config.llvm_tools_dir,
    "strace": "strace",
    "in-tree-build": "the build under test in the checkout's build/ (or "
        "build-sanitize/), where scripts/build makes it",
    "tmpfs": "a small tmpfs this user can mount",
    "mknod": "permission to make device nodes",
}
try:
    lacking = os.path.join(config.ucp_obj_root, "test", "lacking-features.txt")
    staged = "%s.%d" % (lacking, os.getpid())
    with open(staged, "w", encoding="utf-8") as f:
        for feature, needs in sorted(FEATURE_NEEDS.items()):
            if feature not in config.available_features:
                f.write("%s: %s\n" % (feature, needs))
    os.replace(staged, lacking)
except OSError:
    pass  # The report then says less; the tests are not affected.
