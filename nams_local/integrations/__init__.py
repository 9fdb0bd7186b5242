"""Memory for chat models: the chat interface, adapters and the memory modes."""

from .chat import ChatMessage, ChatModel, ChatResponse, StreamChunk, ToolCallRequest
from .middleware import MemoryChatModel, MemoryConfig, MemoryMiddleware
from .nams import Nams, NamsProvider, create_nams, create_nams_provider
from .scripted import RecordedCall, ScriptedChatModel, ScriptedReply

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "MemoryChatModel",
    "MemoryConfig",
    "MemoryMiddleware",
    "Nams",
    "NamsProvider",
    "RecordedCall",
    "ScriptedChatModel",
    "ScriptedReply",
    "StreamChunk",
    "ToolCallRequest",
    "create_nams",
    "create_nams_provider",
]
