#!/usr/bin/env bash
# The device checks, as one prepared run for a machine with a CUDA/ROCm GPU (see benchmarks/README.md).
# Expects the project's wheel and its dependencies' wheels in .whl/ (built and downloaded beforehand),
# and writes its logs under $OUT (or ./gpu-out). Every step is bounded so the whole run ends in < 9 min.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
STEPS=${STEPS:-"1 2 3"}
# The carried wheels go into the environment of the python3 that holds the CUDA torch (the machine is
# bare and given back after the session): the tests run the console scripts of sys.executable's
# environment and drop PYTHONPATH for their subprocesses, so a --target install would not be seen there.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir .whl/*.whl || exit 1
fi
{
  date -u; nvidia-smi -L || rocm-smi || true
  python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-')"
  python3 -c "import flake8_forksafe, libcst, flake8; print('forksafe', flake8_forksafe.__file__, 'libcst', libcst.__version__ if hasattr(libcst, '__version__') else '?', 'flake8', flake8.__version__)"
} 2>&1 | tee "$OUT/env.txt"
case " $STEPS " in *" 1 "*)
# 1. the GPU-marked tests, verbose (each says what it proved)
timeout 150 python3 -m pytest -p no:cacheprovider -m gpu tests/harness -v -rs -o addopts="" 2>&1 | tee "$OUT/gpu_tests.log"
echo "gpu tests rc=${PIPESTATUS[0]}" | tee -a "$OUT/env.txt";;
esac
case " $STEPS " in *" 2 "*)
# 2. the verify matrix of the CUDA rules, as a user sees it
timeout 90 forksafe verify --select FRK301,FRK404 2>&1 | tee "$OUT/verify_cuda.txt"
echo "verify rc=${PIPESTATUS[0]}" | tee -a "$OUT/env.txt";;
esac
case " $STEPS " in *" 3 "*)
# 3. the rest of the harness and the behaviour programs on this platform (Python 3.12, CUDA torch)
timeout 240 python3 -m pytest -p no:cacheprovider tests/harness tests/behaviour -n 14 -q -rfs --tb=short -W ignore -o addopts="" 2>&1 | tee "$OUT/harness.log"
echo "harness rc=${PIPESTATUS[0]}" | tee -a "$OUT/env.txt";;
esac
