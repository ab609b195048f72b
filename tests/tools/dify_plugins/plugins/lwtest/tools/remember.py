from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage


class RememberTool(Tool):
    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        storage = self.session.storage
        key = tool_parameters["key"]
        try:
            previous = storage.get(key).decode()
        except Exception:  # the SDK raises when the key was never set
            previous = "(nothing)"
        storage.set(key, tool_parameters["value"].encode())
        yield self.create_text_message(f"previous: {previous}")
