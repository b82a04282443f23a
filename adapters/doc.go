// Package adapters holds what every platform adapter shares: the normalized
// IncomingChatMessage, the ingress path (chatKey → ChatStore → queue) and the
// one global QueryQueue.
package adapters
