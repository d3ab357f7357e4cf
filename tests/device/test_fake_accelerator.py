"""The fake CUDA device fails where CUDA fails, passes what CUDA accepts, and counts host waits.

These are the controls of ``tests/device``: without them a path passing on the fake device could
mean that the fake sees nothing.
"""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

from tests.device.fake_accelerator import (
    BLOCKING_COPY_TO_DEVICE,
    COPY_TO_HOST,
    DATA_DEPENDENT,
    DEVICE_QUERY,
    MIXED,
    SCALAR_READ,
    TO_NUMPY,
    FakeCuda,
    fake_cuda_device,
)


def test_a_model_on_the_device_refuses_a_batch_left_on_the_host(fake_cuda: FakeCuda) -> None:
    # Prepare
    model = nn.Linear(3, 2).to("cuda")
    batch = torch.randn(4, 3)

    # Execute / Assert
    with pytest.raises(RuntimeError, match=MIXED[:40]):
        model(batch)
    assert model(batch.to("cuda")).device == torch.device("cuda", 0)  # the control


def test_numpy_of_a_device_tensor_is_refused_as_cuda_refuses_it(fake_cuda: FakeCuda) -> None:
    # Prepare
    on_device = torch.ones(3).cuda()

    # Execute / Assert
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy"):
        on_device.numpy()
    with pytest.raises(TypeError, match=r"can't convert cuda:0"):
        on_device[1:].detach().numpy()  # a view of it too
    assert on_device.cpu().numpy().tolist() == [1.0, 1.0, 1.0]  # the control
    assert TO_NUMPY.startswith("can't convert")


def test_index_select_with_host_indices_is_refused_but_advanced_indexing_is_not(
    fake_cuda: FakeCuda,
) -> None:
    # Prepare
    table = torch.arange(12.0).reshape(4, 3).to("cuda")
    rows = torch.tensor([2, 0])

    # Execute / Assert: as CUDA does
    with pytest.raises(RuntimeError, match=MIXED[:40]):
        torch.index_select(table, 0, rows)
    assert table[rows].device.type == "cuda"
    assert (table * torch.tensor(2.0)).device.type == "cuda"  # a 0-dim CPU scalar is fine
    with pytest.raises(RuntimeError, match=MIXED[:40]):
        table * torch.ones(3)


def test_a_training_step_keeps_gradients_and_optimizer_state_on_the_device(
    fake_cuda: FakeCuda,
) -> None:
    # Prepare
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to("cuda")
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1, fused=True)
    inputs = torch.randn(5, 3).to("cuda", non_blocking=True).requires_grad_(True)

    # Execute
    loss = model(inputs).square().mean()
    (input_grad,) = torch.autograd.grad(loss, inputs, retain_graph=True)
    loss.backward()
    optimizer.step()

    # Assert
    first = model[0]
    assert isinstance(first, nn.Linear)
    weight = first.weight
    assert weight.grad is not None and weight.grad.is_cuda and input_grad.is_cuda
    assert all(value.is_cuda for value in optimizer.state[weight].values())
    assert weight.data.is_cuda and weight.detach().get_device() == 0


def test_host_waits_are_counted_and_asynchronous_copies_are_not() -> None:
    with fake_cuda_device() as fake:
        # Prepare
        host = torch.randn(4, 2)
        on_device = host.to("cuda", non_blocking=True)
        assert not fake.syncs  # the control: an asynchronous copy waits for nothing

        # Execute
        host.to("cuda")
        on_device.sum().item()
        bool(on_device.sum() > 0)
        on_device.cpu()
        on_device.tolist()
        on_device[on_device > 0]
        torch.cuda.device_count()

    # Assert
    assert fake.syncs == {
        BLOCKING_COPY_TO_DEVICE: 1,
        SCALAR_READ: 2,
        COPY_TO_HOST: 2,
        DATA_DEPENDENT: 1,
        DEVICE_QUERY: 1,
    }


def test_a_checkpoint_of_device_tensors_loads_on_the_cpu_only_with_map_location() -> None:
    # Prepare
    saved = io.BytesIO()
    with fake_cuda_device():
        torch.save({"weight": torch.ones(2).to("cuda")}, saved)

    # Execute / Assert: outside the fake this is a CPU-only machine again
    assert not torch.cuda.is_available()
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(io.BytesIO(saved.getvalue()), weights_only=True)
    loaded = torch.load(io.BytesIO(saved.getvalue()), weights_only=True, map_location="cpu")
    assert loaded["weight"].tolist() == [1.0, 1.0]
