"""A party process that sends bad frames all run long: each is rejected, the run goes on.

The server and two parties run as separate processes; party 1 is a ``RogueLink``
(``tests/deploy/rogue.py``) that sends malformed, oversized, forged and ill-shaped frames
before every real reply, during alignment, setup, training, evaluation and checkpoints. The run
must complete, log a reason for every rejection, and train exactly as the in-process simulator.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import torch

from tests.deploy.rogue import EMBEDDING_REASONS, JUNK_REASONS
from tests.deploy.scenario import (
    free_port,
    make_scenario,
    simulate_aligned,
    start_party,
    start_server,
)


def test_bad_messages_from_a_party_process_are_rejected_and_the_run_completes(
    tmp_path: Path, spawned: list[subprocess.Popen[bytes]]
) -> None:
    # Prepare
    scenario = make_scenario(tmp_path / "deployment", epochs=2)
    address = f"127.0.0.1:{free_port()}"
    server = start_server(scenario, address)
    rogue = start_party(scenario, 1, address, module="tests.deploy.rogue")
    honest = start_party(scenario, 2, address)
    spawned += [server, rogue, honest]

    # Execute
    status = server.wait(120)

    # Assert: the run completed, and every rejected frame was logged with its reason
    log = (scenario.root / "server.log").read_text()
    assert status == 0, log[-4000:]
    assert rogue.wait(30) == 0 and honest.wait(30) == 0
    rejections = [line for line in log.splitlines() if "rejected a frame from party" in line]
    assert all("from party 1:" in line for line in rejections)
    for reason in (*JUNK_REASONS[:5], *EMBEDDING_REASONS, "not valid in this phase"):
        assert any(reason in line for line in rejections), reason
    assert len(rejections) > 100
    # Assert: the junk changed nothing: same parameters and ledger as the simulator
    reference = simulate_aligned(scenario, tmp_path / "reference")
    checkpoint = torch.load(scenario.run_dir / "checkpoint.pt", weights_only=True)
    head = checkpoint["session"]["trainer"]["server"]["head"]
    for name, value in reference.trainer.server.head.state_dict().items():  # type: ignore[attr-defined]
        torch.testing.assert_close(head[name], value, atol=1e-6, rtol=0)
    ledger = (tmp_path / "reference" / "ledger.csv").read_text()
    assert (scenario.run_dir / "ledger.csv").read_text() == ledger
