"""SecureBoost grows exactly the centralized reference's trees, and refuses what breaks it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.boost.helpers import TEST_KEY_BITS, short_keys, vertical_table
from vfl.boost import BoostParams, fit_reference, secureboost_structure, train_secureboost
from vfl.boost.active import ActiveBooster
from vfl.boost.driver import SecureBoostRun
from vfl.boost.link import local_link
from vfl.boost.messages import (
    NO_NODE,
    Ciphertexts,
    EncryptedGradients,
    HistogramReply,
    HistogramRequest,
    NodeHistogram,
    PaillierKey,
    Reply,
    Request,
    RouteQuery,
    RouteRequest,
    SplitReply,
    SplitRequest,
)
from vfl.boost.paillier import KeyPair
from vfl.boost.passive import PassiveBooster
from vfl.errors import ConfigError, ProtocolError, WireError


def train(labels: np.ndarray, blocks: dict[int, np.ndarray], params: BoostParams) -> SecureBoostRun:
    return train_secureboost(
        labels, blocks, params, key_bits=TEST_KEY_BITS, insecure_test_key=True, workers=1
    )


def structures(run: SecureBoostRun) -> list[object]:
    tables = {run.active.party: run.active.splits, **{p: h.splits for p, h in run.passives.items()}}
    return [secureboost_structure(tree, tables) for tree in run.active.trees]


params_strategy = st.builds(
    BoostParams,
    num_trees=st.integers(1, 3),
    max_depth=st.integers(1, 3),
    learning_rate=st.sampled_from([0.1, 0.3, 1.0]),
    reg_lambda=st.sampled_from([0.0, 1.0, 5.0]),
    gamma=st.sampled_from([0.0, 0.2, 2.0]),
    min_child_weight=st.sampled_from([0.0, 0.5, 2.0]),
    max_bin=st.integers(2, 8),
    objective=st.sampled_from(["binary:logistic", "reg:squarederror"]),
)


@settings(max_examples=50)
@given(
    params=params_strategy,
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(8, 80),
    widths=st.sampled_from([(0, 2), (1, 1, 2), (2, 1), (1, 2, 1, 1)]),
    missing=st.sampled_from([0.0, 0.15]),
    distinct=st.integers(2, 12),
)
def test_secureboost_grows_the_reference_trees(
    params: BoostParams,
    seed: int,
    rows: int,
    widths: tuple[int, ...],
    missing: float,
    distinct: int,
) -> None:
    # Prepare: the label holder is party 1 (with no columns when its width is 0)
    regression = params.objective == "reg:squarederror"
    labels, blocks = vertical_table(
        rows, widths, seed=seed, distinct=distinct, missing=missing, regression=regression
    )
    if regression:
        labels = labels * 10

    # Execute
    run = train(labels, blocks, params)
    reference = fit_reference(labels, blocks, params)

    # Assert: the same splits, leaf weights and predictions, bit for bit
    assert structures(run) == [tree.structure() for tree in reference.trees]
    np.testing.assert_array_equal(run.active.margins, reference.predict_margins(blocks))
    predicted = run.predict("again", blocks)
    np.testing.assert_array_equal(predicted, reference.objective.output(run.active.margins))


def test_the_trees_are_not_trivial() -> None:
    # Prepare: a guard on the property above: its data does grow deep trees split by every party
    labels, blocks = vertical_table(200, (1, 1, 2), seed=3, distinct=8, missing=0.1)

    # Execute
    run = train(labels, blocks, BoostParams(num_trees=2, max_depth=3, max_bin=8))

    # Assert
    owners = {node.owner for tree in run.active.trees for node in tree.nodes if not node.is_leaf}
    assert owners == {1, 2, 3}
    assert all(max(node.depth for node in tree.nodes) == 3 for tree in run.active.trees)


class DroppingPassive(PassiveBooster):
    """A holder that leaves one row out of every histogram it sums (the negative control).

    It splits nodes on their true rows, so its histograms and its splits disagree.
    """

    def handle(self, request: Request) -> Reply:
        if not isinstance(request, HistogramRequest):
            return super().handle(request)
        parents = {node: rows for node, (rows, _) in self._nodes.items()}
        nodes = tuple(dataclasses.replace(n, rows=n.rows[1:]) for n in request.nodes)
        reply = super().handle(dataclasses.replace(request, nodes=nodes))
        for n in request.nodes:
            self._nodes[n.node] = (n.rows, self._nodes[n.node][1])
            if n.sibling != NO_NODE:
                sibling_rows = np.setdiff1d(parents[n.parent], n.rows)
                self._nodes[n.sibling] = (sibling_rows, self._nodes[n.sibling][1])
        return reply


def run_with(
    passive_type: type[PassiveBooster],
    labels: np.ndarray,
    blocks: dict[int, np.ndarray],
    params: BoostParams,
) -> ActiveBooster:
    keys = KeyPair.generate(TEST_KEY_BITS, insecure_test_key=True)
    passives = {
        p: passive_type(p, blocks[p], max_bin=params.max_bin, insecure_test_key=True)
        for p in (2, 3)
    }
    active = ActiveBooster(1, labels, blocks[1], params, keys, workers=1)
    link = local_link(passives)
    active.connect(link, [2, 3])
    active.fit(link)
    return active


def test_a_holder_that_sums_the_wrong_rows_is_caught() -> None:
    # Prepare: the honest run of the same data succeeds (so the failure below is the drop's)
    labels, blocks = vertical_table(120, (0, 2, 2), seed=5, distinct=6)
    params = BoostParams(num_trees=2, max_depth=3, max_bin=6)
    honest = run_with(PassiveBooster, labels, blocks, params)
    assert len(honest.trees) == 2

    # Execute / Assert: its histograms do not add up, or its split disagrees with them
    with pytest.raises(
        ProtocolError, match=r"party [23]'s .* of node \d+ (sends|does not decrypt)"
    ):
        run_with(DroppingPassive, labels, blocks, params)


class ForeignKeyPassive(PassiveBooster):
    """A holder whose histograms are encrypted under another key of the same size."""

    other = KeyPair.generate(TEST_KEY_BITS, insecure_test_key=True)

    def handle(self, request: Request) -> Reply:
        reply = super().handle(request)
        if isinstance(reply, HistogramReply):
            key = self.other.public
            fake = tuple(
                NodeHistogram(
                    h.node,
                    dataclasses.replace(
                        h.values,
                        data=key.encode([key.encrypt_zero() for _ in range(h.values.count)]),
                    ),
                )
                for h in reply.histograms
            )
            reply = HistogramReply(reply.tree, fake)
        return reply


def test_histograms_under_another_key_are_refused() -> None:
    labels, blocks = vertical_table(40, (1, 1, 1), seed=1)
    with pytest.raises(
        (ProtocolError, WireError),
        match=r"party [23]'s histogram of node 0(: ciphertext \d+ is not a valid ciphertext of"
        r" this 512-bit key| does not decrypt to valid sums .* under another public key)",
    ):
        run_with(ForeignKeyPassive, labels, blocks, BoostParams(num_trees=1, max_depth=2))


def test_a_passive_holder_refuses_bad_requests() -> None:
    # Prepare: a trained holder
    labels, blocks = vertical_table(30, (1, 1, 1), seed=2)
    run = train(labels, blocks, BoostParams(num_trees=1, max_depth=2))
    passive = run.passives[2]
    size = run.active.keys.public.ciphertext_size
    gradients = EncryptedGradients(0, 107, Ciphertexts(size, b""))

    # Execute / Assert
    with pytest.raises(ProtocolError, match="expected the gradients of tree 1, got tree 0"):
        passive.handle(gradients)
    with pytest.raises(ProtocolError, match="holds no table 'nope'; it holds train"):
        passive.handle(RouteRequest("nope", ()))
    with pytest.raises(ProtocolError, match="split record 99 is unknown"):
        passive.handle(RouteRequest("train", (RouteQuery(99, np.arange(3)),)))
    with pytest.raises(ProtocolError, match=r"rows must be ascending positions in \[0, 30\)"):
        passive.handle(RouteRequest("train", (RouteQuery(0, np.array([5, 40])),)))
    with pytest.raises(ProtocolError, match="holds the gradients of tree 0, not of tree 3"):
        passive.handle(SplitRequest(3, ()))


def test_gradients_of_the_wrong_size_or_count_are_refused() -> None:
    # Prepare
    _, blocks = vertical_table(10, (1, 1), seed=4)
    passive = PassiveBooster(2, blocks[2], max_bin=4, insecure_test_key=True)
    keys = short_keys()
    passive.handle(PaillierKey(keys.public.to_bytes()))
    size = keys.public.ciphertext_size

    # Execute / Assert
    short = Ciphertexts(size, keys.public.encode([keys.public.encrypt_zero()] * 9))
    with pytest.raises(WireError, match="expected 10 ciphertexts, got 9"):
        passive.handle(EncryptedGradients(0, 107, short))
    truncated = Ciphertexts(size, keys.public.encode([keys.public.encrypt_zero()] * 10)[:-1])
    with pytest.raises(WireError, match="not a whole number of 128-byte ciphertexts"):
        passive.handle(EncryptedGradients(0, 107, truncated))


def test_column_blocks_must_name_every_party() -> None:
    labels, blocks = vertical_table(10, (1, 1), seed=0)
    with pytest.raises(
        ConfigError, match=r"given for parties \[2\]; expected one for each of \[1, 2\]"
    ):
        train_secureboost(
            labels,
            {2: blocks[2]},
            BoostParams(),
            active_party=1,
            key_bits=512,
            insecure_test_key=True,
        )


def test_split_reply_without_one_boolean_per_row_is_refused() -> None:
    class ShortMasks(PassiveBooster):
        def handle(self, request: Request) -> Reply:
            reply = super().handle(request)
            if isinstance(reply, SplitReply):
                results = tuple(dataclasses.replace(r, left=r.left[1:]) for r in reply.results)
                reply = SplitReply(reply.tree, results)
            return reply

    labels, blocks = vertical_table(60, (0, 2, 2), seed=5)
    with pytest.raises(ProtocolError, match="does not give one boolean per row"):
        run_with(ShortMasks, labels, blocks, BoostParams(num_trees=1, max_depth=2))


def test_a_split_that_disagrees_with_its_histogram_is_refused() -> None:
    class FlippedMask(PassiveBooster):
        def handle(self, request: Request) -> Reply:
            reply = super().handle(request)
            if isinstance(reply, SplitReply):
                flipped = []
                for result in reply.results:
                    left = result.left.copy()
                    left[0] = not left[0]
                    flipped.append(dataclasses.replace(result, left=left))
                reply = SplitReply(reply.tree, tuple(flipped))
            return reply

    labels, blocks = vertical_table(60, (0, 2, 2), seed=5)
    with pytest.raises(ProtocolError, match=r"split of node 0 sends rows left whose gradient"):
        run_with(FlippedMask, labels, blocks, BoostParams(num_trees=1, max_depth=2))
