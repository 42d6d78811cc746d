package tui

import "charm.land/bubbles/v2/key"

// KeyMap is the view's keys, as data.
type KeyMap struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Back                              key.Binding
	RestartGroup, Restart                   key.Binding
	Pause, Promote, Abort                   key.Binding
	Filter, Help, Quit                      key.Binding
	Yes, No                                 key.Binding
}

// DefaultKeyMap are the keys of `kubectl llm watch`.
func DefaultKeyMap() KeyMap {
	b := func(keys []string, help, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		Up:           b([]string{"up", "k"}, "↑/k", "up"),
		Down:         b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:       b([]string{"pgup", "ctrl+u"}, "pgup", "page up"),
		PageDown:     b([]string{"pgdown", "ctrl+d", "space"}, "pgdn", "page down"),
		Top:          b([]string{"home", "g"}, "g", "first"),
		Bottom:       b([]string{"end", "G"}, "G", "last"),
		Open:         b([]string{"enter"}, "enter", "open"),
		Back:         b([]string{"esc", "backspace"}, "esc", "back"),
		RestartGroup: b([]string{"r"}, "r", "restart group"),
		Restart:      b([]string{"R"}, "R", "restart serving"),
		Pause:        b([]string{"p"}, "p", "pause/resume"),
		Promote:      b([]string{"P"}, "P", "promote canary"),
		Abort:        b([]string{"A"}, "A", "abort canary"),
		Filter:       b([]string{"/"}, "/", "filter"),
		Help:         b([]string{"?"}, "?", "help"),
		Quit:         b([]string{"q", "ctrl+c"}, "q", "quit"),
		Yes:          b([]string{"y", "Y"}, "y", "confirm"),
		No:           b([]string{"n", "N", "esc", "q"}, "n", "cancel"),
	}
}

// listHelp is the footer of the list of servings.
func (k KeyMap) listHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Open, k.Filter, k.Help, k.Quit}
}

// fullHelp is the help screen, in columns.
func (k KeyMap) fullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Open, k.Back, k.Filter, k.Help, k.Quit},
		{k.RestartGroup, k.Restart, k.Pause, k.Promote, k.Abort},
	}
}
