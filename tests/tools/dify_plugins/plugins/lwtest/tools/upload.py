from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage


class UploadTool(Tool):
    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        uploaded = self.session.file.upload("note.txt", tool_parameters["text"].encode(), "text/plain")
        yield self.create_json_message(
            {"id": uploaded.id, "name": uploaded.name, "size": uploaded.size, "mime_type": uploaded.mime_type}
        )
