package main

import (
	"errors"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// A limit of the server has no "off": 0 or a negative number is refused where it is set (a
// flag, GITMEM_..., the config file), each of which names itself in the error, rather than
// taken silently as the default.
var errNotPositive = errors.New("must be more than 0 (leave it out for the default)")

// positiveInt is an int flag that takes values of 1 and more.
type positiveInt struct{ v *int }

func (p positiveInt) String() string {
	if p.v == nil {
		return "0"
	}
	return strconv.Itoa(*p.v)
}
func (p positiveInt) Type() string { return "int" }
func (p positiveInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, strconv.IntSize)
	if err != nil {
		return errors.New("not a whole number")
	}
	if n <= 0 {
		return errNotPositive
	}
	*p.v = int(n)
	return nil
}

// positiveDuration is a duration flag that takes values above 0.
type positiveDuration struct{ v *time.Duration }

func (p positiveDuration) String() string {
	if p.v == nil {
		return "0s"
	}
	return p.v.String()
}
func (p positiveDuration) Type() string { return "duration" }
func (p positiveDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration (like 30s, 2m or 1h)")
	}
	if d <= 0 {
		return errNotPositive
	}
	*p.v = d
	return nil
}

// positiveIntVar and positiveDurationVar define such flags, with their defaults.
func positiveIntVar(fs *pflag.FlagSet, v *int, name string, def int, usage string) {
	*v = def
	fs.Var(positiveInt{v}, name, usage)
}

func positiveDurationVar(fs *pflag.FlagSet, v *time.Duration, name string, def time.Duration, usage string) {
	*v = def
	fs.Var(positiveDuration{v}, name, usage)
}
