package tune

// Report is everything tune says about one host and one target: what it
// read, the budgets it proposes, how to pass them to sluice, and each
// kernel or process limit with what the target needs from it.
type Report struct {
	// Host is what was read.
	Host Host `json:"host"`
	// Target is what was planned for.
	Target Target `json:"target"`
	// Budgets is the proposed engine configuration.
	Budgets Budgets `json:"budgets"`
	// Env is environment for the server process (GOMEMLIMIT).
	Env []string `json:"env,omitempty"`
	// EchoFlags are the budgets as cmd/echo flags, in order.
	EchoFlags []Flag `json:"echo_flags"`
	// Config is the engine budgets as a Go server.Config composite literal.
	Config string `json:"server_config"`
	// Admission is the global budgets as an admission.GlobalBudgets
	// literal; "" when memory is unknown.
	Admission string `json:"admission_global_budgets,omitempty"`
	// Settings are the kernel and process limits checked.
	Settings []Setting `json:"settings"`
	// Warnings lists every place the host, as it is, falls short of the
	// target: budget warnings first, then limits.
	Warnings []string `json:"warnings"`
	// Fits is true when there are no warnings.
	Fits bool `json:"fits"`
}

// Flag is one command-line flag and its value.
type Flag struct {
	// Name is the flag without its dash.
	Name string `json:"name"`
	// Value is the flag's value as it is typed.
	Value string `json:"value"`
}

// Plan reads nothing: it turns a host already read (ReadHost) and a target
// into a Report. It fails only on an invalid target (ErrInvalidTarget).
func Plan(h Host, t Target) (Report, error) {
	b, err := Compute(h, t)
	if err != nil {
		return Report{}, err
	}
	r := Report{Host: h, Target: t, Budgets: b}
	if b.MemLimitBytes > 0 {
		r.Env = []string{"GOMEMLIMIT=" + goMemLimit(b.MemLimitBytes)}
	}
	r.EchoFlags = echoFlags(b)
	r.Config = configLiteral(b)
	r.Admission = admissionLiteral(b)
	settings, warns := Check(h, t, b)
	r.Settings = settings
	r.Warnings = append(append([]string{}, b.Warnings...), warns...)
	r.Fits = len(r.Warnings) == 0
	return r, nil
}
