"""An MCP call's result from a run's outcome: the answer, its citations and its files."""

from __future__ import annotations

from loopwright.app.dify.events import EventHead, MessageEnd
from loopwright.app.run.runs import RunOutcome
from loopwright.app.wires.mcp import tool_result
from loopwright.errors import ModelError
from loopwright.tools.base import BlobMessage, FileMessage, ImageMessage

HEAD = EventHead("task", "message", "conversation", 0)


def test_the_result_carries_the_answer_citations_and_files() -> None:
    cited = [{"position": 1, "dataset_name": "Handbook", "content": "Leave is 25 days.", "score": 0.9}]
    files = [
        ImageMessage("https://files.example/chart.png"),
        FileMessage("https://files.example/report.pdf", "application/pdf"),
        BlobMessage(b"raw"),
    ]
    end = MessageEnd(HEAD, {"retriever_resources": cited, "usage": {}})
    result = tool_result(RunOutcome("normal", "25 days.", end=end, files=files))
    assert not result.is_error and result.text == "25 days."
    assert result.structured is not None
    assert result.structured["retriever_resources"] == cited
    assert result.structured["conversation_id"] == "conversation"
    assert result.structured["files"] == [
        {"type": "image", "url": "https://files.example/chart.png", "mime_type": "image/png"},
        {"type": "document", "url": "https://files.example/report.pdf", "mime_type": "application/pdf"},
        {"type": "custom", "url": "", "mime_type": "application/octet-stream"},
    ]


def test_a_failed_or_stopped_run_is_an_error_without_structured_content() -> None:
    failed = tool_result(RunOutcome("error", "", ModelError("the model is down")))
    stopped = tool_result(RunOutcome("stopped", ""))
    assert failed.is_error and failed.structured is None and failed.text
    assert stopped.is_error and "stopped" in stopped.text
