from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage


class EchoTool(Tool):
    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        text = str(tool_parameters.get("text", ""))
        if text == "leak":  # a careless plugin quoting its secret in an error
            raise ValueError(f"the service refused token {self.runtime.credentials.get('token')}")
        yield self.create_text_message(text)
