"""A PEP 517 build backend for this package, standard library only: a pure-Python wheel is a
zip of the sources plus three metadata files, which is all this package needs, and keeping it
here means pip builds it with no package index (setuptools cannot build a wheel offline
without the `wheel` package). Name, version and summary come from pyproject.toml's
[project] table; the files from src/."""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(HERE, "src")
# Fixed times make the archives reproducible (zip cannot hold times before 1980).
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _project():
    """The [project] table's string keys. tomllib is 3.11+; the table is ours and flat."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = re.search(r"^\[project\]\n(.*?)(?=^\[|\Z)", text, re.S | re.M).group(1)
    return dict(re.findall(r'^(\w[\w-]*)\s*=\s*"([^"]*)"\s*$', table, re.M))


def _names():
    project = _project()
    return project["name"], project["version"], project


def _metadata():
    name, version, project = _names()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
             f"Summary: {project.get('description', '')}", "License: MIT",
             f"Requires-Python: {project.get('requires-python', '>=3.10')}"]
    readme = os.path.join(HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = "\n" + f.read()
    return ("\n".join(lines) + "\n" + body).encode("utf-8")


def _wheel_file():
    return b"Wheel-Version: 1.0\nGenerator: dshpty_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files():
    """(archive name, path) of every file under src/, sorted; no bytecode."""
    out = []
    for root, dirs, files in os.walk(SOURCES):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(root, name)
            out.append((os.path.relpath(path, SOURCES).replace(os.sep, "/"), path))
    return out


def _dist_info():
    name, version, _ = _names()
    return f"{name}-{version}.dist-info"


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _write_wheel(wheel_directory, entries):
    """entries: (archive name, bytes). Adds the dist-info files and RECORD."""
    name, version, _ = _names()
    filename = f"{name}-{version}-py3-none-any.whl"
    dist_info = _dist_info()
    entries = list(entries) + [(f"{dist_info}/METADATA", _metadata()), (f"{dist_info}/WHEEL", _wheel_file())]
    record = [f"{arcname},{_record_hash(data)},{len(data)}" for arcname, data in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for arcname, data in entries:
            info = zipfile.ZipInfo(arcname, ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, "METADATA"), "wb") as f:
        f.write(_metadata())
    with open(os.path.join(dist_info, "WHEEL"), "wb") as f:
        f.write(_wheel_file())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for arcname, path in _package_files():
        with open(path, "rb") as f:
            entries.append((arcname, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel holding one .pth file that puts src/ on sys.path."""
    name, _, _ = _names()
    return _write_wheel(wheel_directory, [(f"__editable__.{name}.pth", (SOURCES + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    name, version, _ = _names()
    base = f"{name}-{version}"
    filename = f"{base}.tar.gz"
    members = ["pyproject.toml", "README.md", "build_backend/dshpty_build.py"]
    members += ["src/" + arcname for arcname, _ in _package_files()]
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for member in members:
            path = os.path.join(HERE, member)
            if not os.path.exists(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            info = tarfile.TarInfo(f"{base}/{member}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            sdist.addfile(info, io.BytesIO(data))
        pkg_info = tarfile.TarInfo(f"{base}/PKG-INFO")
        metadata = _metadata()
        pkg_info.size, pkg_info.mode, pkg_info.mtime = len(metadata), 0o644, 0
        sdist.addfile(pkg_info, io.BytesIO(metadata))
    return filename
