"""Memory for chat models: the chat interface, adapters and the memory modes."""

from .chat import ChatMessage, ChatModel, ChatResponse, StreamChunk, ToolCallRequest
from .middleware import MemoryChatModel, MemoryConfig, MemoryMiddleware
from .nams import Nams, NamsProvider, create_nams, create_nams_provider
from .openai_model import OpenAIChatModel
from .openai_wrap import wrap_openai
from .scripted import RecordedCall, ScriptedChatModel, ScriptedReply
from .sync import SyncChatModel

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "MemoryChatModel",
    "MemoryConfig",
    "MemoryMiddleware",
    "Nams",
    "NamsProvider",
    "OpenAIChatModel",
    "RecordedCall",
    "ScriptedChatModel",
    "ScriptedReply",
    "StreamChunk",
    "SyncChatModel",
    "ToolCallRequest",
    "create_nams",
    "create_nams_provider",
    "wrap_openai",
]
