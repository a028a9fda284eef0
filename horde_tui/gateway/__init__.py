"""The per-run gateway: members speak OpenAI chat completions, any model answers via litellm."""
