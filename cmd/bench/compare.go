package main

import (
	"context"
	"errors"
)

func runCompare(ctx context.Context, args []string) error { return errors.New("todo") }
