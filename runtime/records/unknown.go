package records

import "encoding/json"

// Replicas of two versions run side by side during a rolling upgrade, so a
// record a newer version wrote may hold fields this one does not know. A
// record's type keeps them (UnknownFields) and writes them back as found
// (WithUnknown), so the newer version still finds them after this one
// rewrote the record.

// UnknownFields returns the fields of the JSON object b not named in
// known (nil when there are none).
func UnknownFields(b []byte, known ...string) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for _, k := range known {
		delete(all, k)
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

// WithUnknown adds to the JSON object b the fields of extra it does not
// have already.
func WithUnknown(b []byte, extra map[string]json.RawMessage) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, known := all[k]; !known {
			all[k] = v
		}
	}
	return json.Marshal(all)
}
