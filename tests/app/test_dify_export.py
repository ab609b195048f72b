"""app.dify_export: an app's configuration as a Dify DSL export that the Dify import reads back."""

from __future__ import annotations

import yaml

from loopwright.app.config import AppConfig, import_dify_dsl
from loopwright.app.dify.dsl_export import export_dify_dsl


def test_trust_features_go_to_dify_and_back() -> None:
    config = AppConfig.model_validate(
        {
            "model": "openai:gpt-4o-mini",
            "strategy": "react",
            "instruction": "Answer about {{topic}}.",
            "user_input_form": [
                {"variable": "topic", "label": "Topic", "type": "select", "options": ["a", "b"]}
            ],
            "tools": [{"name": "current_time", "form_values": {"timezone": "UTC"}}],
            "moderation": [
                {
                    "type": "keywords",
                    "keywords": ["guaranteed returns", "diagnosis"],
                    "inputs": {"preset_response": "I cannot help with that."},
                    "outputs": {"enabled": False},
                },
                {"type": "regex", "patterns": ["buy now"], "preset_response": "No sales talk."},
            ],
            "annotation_reply": {"enabled": True, "score_threshold": 0.8, "embedding": "minilm"},
        }
    )
    exported = export_dify_dsl("Advisor", config)
    document = yaml.safe_load(exported.text)
    assert (document["kind"], document["app"]["mode"]) == ("app", "agent-chat")
    assert any("'regex' is not exported" in w for w in exported.warnings)
    back = import_dify_dsl(exported.text).config
    for name in ("model", "strategy", "instruction", "user_input_form", "tools", "annotation_reply"):
        assert getattr(back, name) == getattr(config, name), name
    (rule,) = back.moderation
    assert rule.type == "keywords" and rule.keywords == ["guaranteed returns", "diagnosis"]
    assert (rule.inputs.enabled, rule.inputs.preset_response, rule.outputs.enabled) == (
        True,
        "I cannot help with that.",
        False,
    )
