from typing import Any

from dify_plugin import ToolProvider
from dify_plugin.errors.tool import ToolProviderCredentialValidationError


class LwtestProvider(ToolProvider):
    def _validate_credentials(self, credentials: dict[str, Any]) -> None:
        if credentials.get("token") not in (None, "", "good-token"):
            raise ToolProviderCredentialValidationError("token rejected")
