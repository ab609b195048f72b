"""OpenAPI tools: one tool per operation of an OpenAPI 3.x / Swagger 2.0 description or an OpenAI
plugin manifest, called through the network guard (see docs/tools.md, "OpenAPI tools")."""

from loopwright.tools.openapi.auth import APIAuth
from loopwright.tools.openapi.operations import Operation
from loopwright.tools.openapi.source import OpenAPISource
from loopwright.tools.openapi.spec import LoadedSpec, SpecError
from loopwright.tools.openapi.toolset import OpenAPIToolset

__all__ = ["APIAuth", "LoadedSpec", "OpenAPISource", "OpenAPIToolset", "Operation", "SpecError"]
