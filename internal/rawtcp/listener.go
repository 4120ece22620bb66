package rawtcp

import "net"

// Listener returns ln with its accepted connections wrapped by Wrap (ln
// itself when the layer is switched off, EnvSwitch).
func Listener(ln net.Listener) net.Listener {
	if !enabled {
		return ln
	}
	return listener{ln}
}

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}
