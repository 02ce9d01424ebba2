"""Agents: anything that answers ``next_turn(messages, tools) -> AgentTurn``."""

from pixelbox.harness.agents.base import (
    Agent,
    AgentError,
    AgentTurn,
    Message,
    ToolArgumentsError,
    ToolCall,
    ToolSchema,
    Usage,
)
from pixelbox.harness.agents.messages import image_part, summarize_messages, text_part
from pixelbox.harness.agents.openai_agent import ModelRequestError, OpenAIAgent, OpenAIConfig
from pixelbox.harness.agents.preflight import EndpointUnusable
from pixelbox.harness.agents.replay import RecordingError, ReplayAgent, ReplayExhausted
from pixelbox.harness.agents.retry import RetryPolicy

__all__ = [
    "Agent",
    "AgentError",
    "AgentTurn",
    "EndpointUnusable",
    "Message",
    "ModelRequestError",
    "OpenAIAgent",
    "OpenAIConfig",
    "RecordingError",
    "ReplayAgent",
    "ReplayExhausted",
    "RetryPolicy",
    "ToolArgumentsError",
    "ToolCall",
    "ToolSchema",
    "Usage",
    "image_part",
    "summarize_messages",
    "text_part",
]
