from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.model.llm import LLMModelConfig
from dify_plugin.entities.model.message import UserPromptMessage
from dify_plugin.entities.tool import ToolInvokeMessage


class AskTool(Tool):
    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        config = LLMModelConfig(provider="any", model="any", mode="chat", completion_params={})
        result = self.session.model.llm.invoke(
            model_config=config,
            prompt_messages=[UserPromptMessage(content=tool_parameters["question"])],
            stream=False,
        )
        yield self.create_text_message(f"model says: {result.message.content}")
