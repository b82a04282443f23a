package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/joho/godotenv"
)

// readDotEnv parses a .env file (KEY=VALUE lines, optional "export ",
// quotes and # comments). A missing file is no error.
func readDotEnv(path string) (map[string]string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	vals, err := godotenv.Read(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("reading %s: %w", EnvFileName, err)
		}
		// godotenv quotes the offending text, which may be a secret: say
		// only what is wrong.
		return nil, fmt.Errorf("%w: %s is not a list of KEY=VALUE lines; fix the line that is not", ErrInvalid, EnvFileName)
	}
	return vals, nil
}
