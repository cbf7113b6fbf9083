"""litellm is asked about models it cannot place (which providers build their requests
without I/O, which list log-probabilities): it must not print its red "Provider List" line
to stdout, where a run's summary and piped JSON go."""

from __future__ import annotations

import pytest

from judge.models.label_tokens import model_lists_logprobs
from judge.models.preparing import prepares_on_loop


def test_asking_where_an_unplaceable_model_prepares_prints_nothing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import litellm

    monkeypatch.setattr(litellm, "suppress_debug_info", False)
    assert prepares_on_loop("claim-judge-test-model-no-provider-knows") is False
    assert "Provider List" not in capsys.readouterr().out


def test_asking_whether_an_unplaceable_model_lists_logprobs_prints_nothing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import litellm

    monkeypatch.setattr(litellm, "suppress_debug_info", False)
    model_lists_logprobs("claim-judge-test-model-unknown-to-litellm")
    assert "Provider List" not in capsys.readouterr().out


def test_routing_a_model_no_provider_knows_prints_nothing_and_says_why(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`judge check` and every run's preflight route the model before any call."""
    import litellm

    from judge.config import JudgeConfig
    from judge.models.preflight import route

    monkeypatch.setattr(litellm, "suppress_debug_info", False)
    where = route(JudgeConfig(model="claim-judge-test-model-no-provider-knows"))
    assert where.error and "LLM Provider NOT provided" in where.error
    assert "Provider List" not in capsys.readouterr().out
