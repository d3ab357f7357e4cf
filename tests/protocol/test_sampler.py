"""The server's batch order: a partition of the rows per epoch, optionally without the tail."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from vfl.protocol.sampler import BatchSampler


@given(n=st.integers(1, 300), batch=st.integers(1, 64), epoch=st.integers(0, 5))
def test_an_epoch_covers_every_row_once(n: int, batch: int, epoch: int) -> None:
    # Prepare
    sampler = BatchSampler(n, batch, seed=7)

    # Execute
    batches = sampler.epoch(epoch)

    # Assert
    assert len(batches) == len(sampler) == -(-n // batch)
    assert sorted(torch.cat(batches).tolist()) == list(range(n))


@given(n=st.integers(1, 300), batch=st.integers(1, 64), epoch=st.integers(0, 5))
def test_drop_last_keeps_only_full_batches(n: int, batch: int, epoch: int) -> None:
    # Prepare
    if n < batch:
        with pytest.raises(ValueError, match="leaves no batch"):
            BatchSampler(n, batch, drop_last=True)
        return
    sampler = BatchSampler(n, batch, seed=7, drop_last=True)

    # Execute
    batches = sampler.epoch(epoch)

    # Assert
    assert len(batches) == len(sampler) == n // batch
    assert all(len(b) == batch for b in batches)
    rows = torch.cat(batches).tolist()
    assert len(set(rows)) == len(rows)
    assert rows == torch.cat(BatchSampler(n, batch, seed=7).epoch(epoch)).tolist()[: len(rows)]
