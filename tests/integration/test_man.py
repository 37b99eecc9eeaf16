"""The man pages build from docs/*.md and render without a groff warning."""

import os
import shutil
import subprocess

import pytest

from conftest import BUILD, SRC

PAGES = ["toolsd.8", "toolsctl.1", "toolsd.conf.5"]


@pytest.mark.parametrize("page", PAGES)
def test_man_page_renders(page, tmp_path):
    out = tmp_path / page
    subprocess.run(["/usr/bin/python3", os.path.join(SRC, "scripts", "md2man.py"),
                    os.path.join(SRC, "docs", page + ".md"), str(out)], check=True)
    assert os.path.exists(os.path.join(BUILD, page)), "meson did not build %s" % page
    if shutil.which("groff") is None:
        pytest.skip("groff missing")
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", str(out)], capture_output=True, text=True)
    name = page.split(".")[0] if page != "toolsd.conf.5" else "toolsd.conf"
    assert "NAME" in r.stdout and name in r.stdout
