package engine

import "github.com/shipmyagent/ship/runtime/dispatch"

// Dispatchers is the registry of the channels' dispatchers. Parts of the
// core built beside the engine (the task scheduler) ask a chat's platform
// through it what they may not decide by the platform's name: how a post
// ship makes on its own reaches the chat (dispatch.TaskRoute).
func (e *Engine) Dispatchers() *dispatch.Registry { return e.registry }
