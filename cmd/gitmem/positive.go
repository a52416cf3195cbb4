package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// positive is a flag of a number that must be more than 0, an int or a duration: a limit of
// the server has no "off", so 0 or a negative number is refused where it is set (a flag,
// GITMEM_..., the config file), each of which names itself in the error, rather than taken
// silently as the default.
type positive[T int | time.Duration] struct {
	v     *T
	kind  string // what pflag's help calls it: int, duration
	parse func(string) (T, error)
}

func (p positive[T]) String() string {
	if p.v == nil {
		return fmt.Sprint(T(0))
	}
	return fmt.Sprint(*p.v)
}

func (p positive[T]) Type() string { return p.kind }

func (p positive[T]) Set(s string) error {
	n, err := p.parse(s)
	if err != nil {
		return err
	}
	if n <= 0 {
		return errors.New("must be more than 0 (leave it out for the default)")
	}
	*p.v = n
	return nil
}

// positiveIntVar and positiveDurationVar define such flags, with their defaults.
func positiveIntVar(fs *pflag.FlagSet, v *int, name string, def int, usage string) {
	*v = def
	fs.Var(positive[int]{v, "int", func(s string) (int, error) {
		n, err := strconv.ParseInt(s, 0, strconv.IntSize)
		if err != nil {
			return 0, errors.New("not a whole number")
		}
		return int(n), nil
	}}, name, usage)
}

func positiveDurationVar(fs *pflag.FlagSet, v *time.Duration, name string, def time.Duration, usage string) {
	*v = def
	fs.Var(positive[time.Duration]{v, "duration", func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, errors.New("not a duration (like 30s, 2m or 1h)")
		}
		return d, nil
	}}, name, usage)
}

// inRange is a flag of a whole number from least to most (search's --limit): a value out of
// the range, or not a number, is a usage error, in the flag's name, as it is parsed; what the
// command is given is in range.
type inRange struct {
	v           *int
	name        string // the flag's long name, which its errors give for -n too
	least, most int
}

func (r inRange) String() string {
	if r.v == nil {
		return "0"
	}
	return strconv.Itoa(*r.v)
}

func (r inRange) Type() string { return "int" }

func (r inRange) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, strconv.IntSize)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return usageError{fmt.Errorf("--%s takes a number from %d to %d, got %q", r.name, r.least, r.most, s)}
	case err != nil || n < int64(r.least) || n > int64(r.most):
		return usageError{fmt.Errorf("--%s takes %d to %d, got %s", r.name, r.least, r.most, strings.TrimSpace(s))}
	}
	*r.v = int(n)
	return nil
}

// inRangeVarP defines such a flag, with its default.
func inRangeVarP(fs *pflag.FlagSet, v *int, name, shorthand string, def, least, most int, usage string) {
	*v = def
	fs.VarP(inRange{v, name, least, most}, name, shorthand, usage)
}

// rateFlag is the flag of a rate that may be 0 (off) or more, a float: a negative number, or
// one that is not finite, is refused where it is set, as a positive flag's 0 is.
type rateFlag struct{ v *float64 }

func (r rateFlag) String() string {
	if r.v == nil {
		return "0"
	}
	return strconv.FormatFloat(*r.v, 'f', -1, 64)
}

func (r rateFlag) Type() string { return "float" }

func (r rateFlag) Set(s string) error {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return errors.New("not a number")
	}
	if n < 0 {
		return errors.New("must be 0 (no limit) or more")
	}
	*r.v = n
	return nil
}

// rateVar defines such a flag, 0 by default.
func rateVar(fs *pflag.FlagSet, v *float64, name, usage string) {
	*v = 0
	fs.Var(rateFlag{v}, name, usage)
}
