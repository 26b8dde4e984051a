"""The conformance corpus: published projects whose whole own test suites the isolated oracle
must judge as their own pytest does (docs/design/isolated-oracle.md, "Conformance").

Each project is one sdist on the package index, pinned by sha256 and fetched at run time
(bench/fidelity/_sdist.py: ``pip download``, cached), never copied here. The projects were
chosen, and this list written, before any of them was run: none is tuned for.

``test_requires`` is what the project's own test run needs beyond what it declares as
dependencies (its test extras, tox deps, the pytest plugins its configuration names): the
project's env is built from its declarations plus these (sandbox/_env.py), the same env for
its own pytest and for both scorer modes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Project:
    name: str
    """The project's name on the package index."""
    version: str
    sha256: str
    """Of the sdist the index serves for ``name==version``."""
    test_requires: tuple[str, ...] = ()
    style: str = ""
    """What of the oracle's reach it exercises (the doc's table says the same)."""


PROJECTS: tuple[Project, ...] = (
    Project(
        "priority",
        "2.0.0",
        "c965d54f1b8d0d0b19479db3924c7c36cf672dbf2aec92d43fbdaf4492ba18c0",
        style="Hypothesis-heavy, class-based, tests in test/",
    ),
    Project(
        "hpack",
        "4.2.0",
        "0895cfa3b5531fc65fe439c05eb65144f123bf7a394fcaa56aa423548d8e45c0",
        test_requires=("typing_extensions",),
        style="Hypothesis, bytes round trips, JSON fixture files",
    ),
    Project(
        "hyperlink",
        "21.0.0",
        "427af957daa58bc909471c6c40f74c5450fa123dd093fc53efd2e91d2705a56b",
        test_requires=("idna>=2.5",),  # setup.py install_requires (env build reads no setup.py)
        style="tests inside the package, unittest classes, Hypothesis strategies",
    ),
    Project(
        "iso8601",
        "2.1.0",
        "6b1d3829ee8921c4301998c909f7829fa9ed3cbdac0d3b16af2d743aed1ba8df",
        test_requires=("pytz",),  # [tool.poetry.dev-dependencies], which env build does not read
        style="a test module inside the package, Hypothesis, tzinfo, pickling",
    ),
    Project(
        "dpath",
        "2.2.0",
        "34f7e630dc55ea3f219e555726f5da4b4b25f2200319c8e6902c394258dd6a3e",
        test_requires=("nose2",),
        style="in-place mutation of the caller's containers, Hypothesis",
    ),
    Project(
        "cachetools",
        "8.0.2",
        "30ac523adfc118b51d2b2e7bad8a0ddb31370dfe2700c7f10ca224f36ccf81e0",
        style="unittest class hierarchies, mutable mappings, identity-keyed decorators",
    ),
    Project(
        "funcy",
        "2.1",
        "8979feb3de7120afd1d00e5a8eae810c1942e4bfbc91697151e9ee1e49f79284",
        test_requires=("whatever",),  # the tests import it; the sdist declares no test deps
        style="identity, generators, decorators, context managers",
    ),
    Project(
        "glom",
        "25.12.0",
        "1ae7da88be3693df40ad27bdf57a765a55c075c86c971bcddd67927403eb0069",
        test_requires=("boltons>=19.3.0", "attrs", "face>=20.1.1", "pyyaml"),  # setup.py
        style="tests inside the package, attrs and boltons dependencies",
    ),
    Project(
        "inflection",
        "0.5.1",
        "1a29730d366e996aaacffb2f1f1cb9593dc38e2ddd30c91250c6dde09ea9b417",
        style="one root test module, heavy parametrize",
    ),
    Project(
        "dacite",
        "1.9.2",
        "6ccc3b299727c7aa17582f0021f6ae14d5de47c7227932c47fec4cdfefd26f09",
        test_requires=("typing_extensions", "pytest-benchmark"),  # its addopts: --benchmark-*
        style="dataclasses, typing generics, get_type_hints",
    ),
    Project(
        "voluptuous",
        "0.16.0",
        "006535e22fed944aec17bef6e8725472476194743c87bd233e912eb463f8ff05",
        style="tests inside the package, exceptions, enums",
    ),
    Project(
        "tabulate",
        "0.10.0",
        "e2cfde8f79420f6deeffdeda9aaec3b6bc5abce947655d17ac662b126e48a60d",
        style="parametrize, importorskip of optional dependencies, pytest.warns",
    ),
    Project(
        "async-lru",
        "2.4.0",
        "b0b0077d9b7596615b3c12d0aad4f6aeccaaa0ac75ceae472608ede89e764c08",
        test_requires=("pytest-asyncio", "pytest-timeout", "pytest-cov", "typing_extensions"),
        style="async tests (pytest-asyncio auto mode), filterwarnings=error, xfail_strict",
    ),
    Project(
        "platformdirs",
        "4.14.9",
        "c6b188e03ffd4dfe1bf8c4bcb47cd94711af244a9852dbff60297bd753684d5d",
        test_requires=("pytest-mock",),
        style="pytest-mock's mocker, monkeypatch, pathlib",
    ),
    Project(
        "xmltodict",
        "1.0.4",
        "6d94c9f834dd9e44514162799d344d815a3a4faec913717a9ecbfa5be1bb8e61",
        style="callbacks and generators handed to the product",
    ),
    Project(
        "ordered-set",
        "4.1.0",
        "694a8e44c87657c59292ede72891eb91d34131f6531463aab3009191c77364a8",
        style="pickling, identity, in-place set operations, doctests in addopts",
    ),
    Project(
        "simpleeval",
        "1.0.8",
        "b417f869c11f2de034eb919820a825f35d12ce99f63a43971947ce73679eb9ba",
        style="unittest classes, the product calling the tests' own functions",
    ),
    Project(
        "parsimonious",
        "0.11.0",
        "e080377d98957beec053580d38ae54fcdf7c470fb78670ba4bf8b5f9d5cad2a9",
        style="tests inside the package, regex dependency, visitor subclasses",
    ),
    Project(
        "typing-inspect",
        "0.9.0",
        "b23fc42ff6f6ef6954e4852c1fb512cdd18dbea03134f91f856a95ccc9461f78",
        test_requires=("mypy_extensions>=0.3.0", "typing_extensions>=3.7.4"),  # setup.py
        style="typing generics, TypeVar, Protocol, NewType",
    ),
    Project(
        "overrides",
        "7.7.0",
        "55158fa3d93b98cc75299b1e67078ad9003ca27945c76162c1c0766d6f91820a",
        style="decorators on the tests' class hierarchies, typing checks",
    ),
    Project(
        "portion",
        "2.6.3",
        "4dd6a68bb1cd7a553d9b1f556818708b973c4a8855244e0af79e2586bba5794e",
        test_requires=("pytest-benchmark",),  # its addopts: --benchmark-skip
        style="operator overloading, a mutable mapping, class-based tests",
    ),
    Project(
        "tenacity",
        "9.2.1",
        "a606b5c808d0cded4a359d5b9932d867ff2a6a6b64d37350260fd01bbdf83839",
        test_requires=("tornado>=6.0", "typing_extensions"),
        style="retry decorators around the tests' functions, async, context managers",
    ),
    Project(
        "croniter",
        "7.0.0",
        "a0b2568303c774f6a4ea2d4ce2e72b1ee911029c7070d64a1befe05cdb107f5a",
        test_requires=("pytz",),
        style="tests inside a src/ package, time zones",
    ),
    Project(
        "addict",
        "2.4.0",
        "b3b2210e0e067a281f5646c8c5db92e99b7231ea8b0eb5f74dbdf9e259d4e494",
        style="a dict subclass mutated in place, pickling, deep copies",
    ),
    Project(
        "isodate",
        "0.7.2",
        "4cd1aa0f43ca76f4a6c6c0292a85f40b35ec2e43e315b59f06e6d32171a953e6",
        style="datetime and its own tzinfo classes, a Duration with operators on stdlib types",
    ),
    Project(
        "itsdangerous",
        "2.2.0",
        "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173",
        test_requires=("freezegun",),  # requirements/tests.in
        style="freezegun around product calls, hashlib constructors, subclassed test classes",
    ),
    Project(
        "uritemplate",
        "4.2.0",
        "480c2ed180878955863323eea31b0ede668795de182617fef9c6ca09e6ec9d0e",
        style="JSON fixture files read by the tests, nested dicts and lists handed to the product",
    ),
    Project(
        "docstring_parser",
        "0.18.0",
        "292510982205c12b1248696f44959db3cdd1740237a968ea1e2e7a900eeb2015",
        style="tests inside the package, parametrize, enums, the product reading tests' docstrings",
    ),
    Project(
        "furl",
        "2.1.4",
        "877657501266c929269739fb5f5980534a41abd6bbabcb367c136d1d3b2a6015",
        test_requires=("six>=1.8.0", "orderedmultidict>=1.0.1"),  # setup.py install_requires
        style="unittest classes, URL objects mutated in place, operators, warnings, mock.patch",
    ),
    Project(
        "boolean.py",
        "5.0",
        "60cbc4bad079753721d32649545505362c754e121570ada4658b852a3a318d95",
        style="a test module inside the package, operators, product classes subclassed, doctests",
    ),
)

SPARES: tuple[Project, ...] = (
    Project(
        "semantic-version",
        "2.10.0",
        "bdabb6d336998cbb378d4b9db3a4b56a1e3235701dc05ea2690d9a997ed5041c",
    ),
    Project("toposort", "1.10", "bfbb479c53d0a696ea7402601f4e693c97b0367837c8898bc6471adfca37a6bd"),
    Project(
        "humanize",
        "4.17.0",
        "1d6a36c453dbfbb3f0b34601d2e0b4ce5d48d780305cd45714843f0068fde6ac",
        test_requires=("freezegun", "pytest-codspeed"),  # its [tests] extra, less pytest-cov
        style="doctests in addopts, filterwarnings=error, freezegun, gettext catalogs",
    ),
    Project(
        "webcolors",
        "25.10.0",
        "62abae86504f66d0f6364c2a8520de4a0c47b80c03fc3a5f1815fedbef7c19bf",
        style="unittest classes, tables of definitions, normalisation",
    ),
    Project(
        "h11",
        "0.16.0",
        "4e35b956cf45792e4caa5885e69fba00bdbc6ffafbfa020300e549b208ee5ff1",
        style="tests inside the package, a state machine, a real HTTP server in a thread",
    ),
)
"""Checked to ship their tests, listed before any was run; run when one of ``PROJECTS``
cannot be run at all (dacite's sdist lacks a test module, async-lru's own pytest stops at
configure, platformdirs' sdist does not download, and toposort's tests are unittest's
``unittest.main()`` at import, no pytest suite)."""

BY_NAME = {p.name: p for p in (*PROJECTS, *SPARES)}
