"""scripts/pip-progress, which scripts/install pipes ``pip install -v`` through: pip's usual lines pass,
the verbose noise does not, llama.cpp's compile shows as status lines (CMake's progress, the elapsed
time), and the whole output lands in the log that the install shows when it fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PIP_VERBOSE = """\
Using pip 25.0 from /x/.venv/lib/python3.11/site-packages/pip (python 3.11)
Collecting llama-cpp-python>=0.3.7
  Downloading llama_cpp_python-0.3.36.tar.gz (50.7 MB)
  Running command pip subprocess to install build dependencies
Building wheels for collected packages: llama-cpp-python
  Building wheel for llama-cpp-python (pyproject.toml): started
  -- The C compiler identification is GNU 12.2.0
  [  2%] Building C object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o
  [  4%] Building CXX object vendor/llama.cpp/ggml/src/CMakeFiles/ggml-base.dir/ggml-opt.cpp.o
  [ 31%] Building CXX object vendor/llama.cpp/src/CMakeFiles/llama.dir/llama-model.cpp.o
  [ 58%] Linking CXX shared library bin/libllama.so
  [100%] Built target llava
  Created wheel for llama-cpp-python: filename=llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl
Installing collected packages: llama-cpp-python
Successfully installed llama-cpp-python-0.3.36"""


def test_pip_output_condensed_to_its_usual_lines_and_the_build_progress(tmp_path: Path) -> None:
    log = tmp_path / "install.log"
    shown = subprocess.run(
        ["bash", str(ROOT / "scripts" / "pip-progress"), str(log)],
        input=PIP_VERBOSE,  # the last line without its newline, as a pipe may end
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    status = [line for line in shown if line.startswith("  compiling llama.cpp: ")]
    # Not a terminal: a status line each time the build passes another 10 %, and at the end.
    assert [line.split(":", 1)[1].split("·")[0].strip() for line in status] == ["2%", "31%", "58%", "100%"]
    assert all(" elapsed" in line for line in status)
    assert status[1].endswith("llama-model.cpp.o") and status[2].endswith("libllama.so")
    assert shown[0] == "Collecting llama-cpp-python>=0.3.7"
    assert "  Building wheel for llama-cpp-python (pyproject.toml): started" in shown
    assert shown[-1] == "Successfully installed llama-cpp-python-0.3.36"
    assert not any(
        noise in "\n".join(shown) for noise in ("Using pip", "Running command", "-- The C compiler")
    )
    assert log.read_text().splitlines() == PIP_VERBOSE.splitlines()
