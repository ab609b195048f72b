"""Errors of the app layer that a client sees, with Dify's messages."""

from __future__ import annotations

from loopwright.errors import NotFoundError, UserInputError

__all__ = [
    "APP_UNAVAILABLE",
    "CONVERSATION_NOT_EXISTS",
    "AppForbiddenError",
    "AppUnavailableError",
    "ConversationNotFoundError",
    "ParentMessageNotFoundError",
    "ProviderNotInitializedError",
    "RunExistsError",
]

APP_UNAVAILABLE = "App unavailable, please check your app configurations."
CONVERSATION_NOT_EXISTS = "Conversation Not Exists."
PARENT_MESSAGE_NOT_EXISTS = "Parent Message Not Exists."


class AppUnavailableError(UserInputError):
    """The app has no configuration to run with (Dify's ``app_unavailable``)."""

    code = "app_unavailable"

    def __init__(self, detail: str = "") -> None:
        super().__init__(APP_UNAVAILABLE)
        self.detail = detail  # for logs; the client sees Dify's message


class ConversationNotFoundError(NotFoundError):
    """No such conversation for this app and end user (or it was deleted)."""

    def __init__(self) -> None:
        super().__init__(CONVERSATION_NOT_EXISTS)


class ParentMessageNotFoundError(NotFoundError):
    """A message's ``parent_message_id`` names no message of its conversation."""

    def __init__(self) -> None:
        super().__init__(PARENT_MESSAGE_NOT_EXISTS)


class ProviderNotInitializedError(UserInputError):
    """The app's model cannot be built: a provider without its key, an unknown spec (Dify's
    ``provider_not_initialize``)."""

    code = "provider_not_initialize"


APP_GONE = "The app no longer exists."
APP_ABNORMAL = "The app's status is abnormal."
API_DISABLED = "The app's API service has been disabled."


class AppForbiddenError(UserInputError):
    """The app may not be used through the Service API: deleted, disabled, or its API turned off
    (Dify's 403 ``forbidden``, with the message saying which)."""

    code = "forbidden"
    status = 403


class RunExistsError(UserInputError):
    """A run was started under this id already (a request retried with its ``Idempotency-Key``)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"a message was sent with this Idempotency-Key already (task {task_id})")
        self.task_id = task_id
