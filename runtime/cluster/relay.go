package cluster

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/shipmyagent/ship/runtime/events"
)

// wireEvent is an Event with Go's default JSON: every field goes over the
// wire (Event's own MarshalJSON writes the SSE shape, which drops some).
type wireEvent events.Event

// relayed is an event on its way to the other replicas, with the version
// of the replica that ran it. Events are live only: a replica shows its
// clients the fields it knows of an event from a newer one.
type relayed struct {
	V int `json:"v"`
	wireEvent
}

// RelayEvents joins bus to the other replicas' buses: what runs here is
// published on ship.events.<replica>, and what runs elsewhere is delivered
// here. The returned func stops the relay.
func (n *Node) RelayEvents(bus *events.Bus) (func(), error) {
	self := eventsSubject + "." + n.opts.Replica
	sub, err := n.nc.Subscribe(eventsSubject+".*", func(m *nats.Msg) {
		if m.Subject == self {
			return
		}
		var e relayed
		if json.Unmarshal(m.Data, &e) == nil {
			bus.Deliver(events.Event(e.wireEvent))
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to the cluster's events: %w", err)
	}
	bus.Relay(n.opts.Replica, func(e events.Event) {
		b, err := json.Marshal(relayed{V: wireVersion, wireEvent: wireEvent(e)})
		if err == nil {
			err = n.nc.Publish(self, b)
		}
		if err != nil {
			n.log.Debug().Err(err).Msg("relaying an event")
		}
	})
	return func() { bus.Relay("", nil); _ = sub.Unsubscribe() }, nil
}
