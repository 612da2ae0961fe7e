package keys

import (
	"bufio"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// EnvVar is the environment variable the CLI reads KEKs from.
const EnvVar = "SESSIONSTORE_KEY"

// KEK is one key-encryption key version: a name and 32 bytes of key.
type KEK struct {
	Version string
	Key     []byte
}

// Provider is a store.KeyProvider over KEKs held in memory, read from a
// key file or an environment variable. The last version listed is the
// current one. It is safe for concurrent use.
type Provider struct {
	current string
	order   []string
	aeads   map[string]cipher.AEAD
}

var _ store.KeyProvider = (*Provider)(nil)

// ErrBadKeys: a key file or variable is malformed.
var ErrBadKeys = errors.New("malformed key-encryption keys")

// NewProvider returns a provider over keks; the last one is current.
// Versions must be distinct, non-empty, without spaces, and keys 32 bytes.
func NewProvider(keks ...KEK) (*Provider, error) {
	if len(keks) == 0 {
		return nil, fmt.Errorf("%w: no key", ErrBadKeys)
	}
	p := &Provider{aeads: make(map[string]cipher.AEAD, len(keks))}
	for _, k := range keks {
		if k.Version == "" || strings.ContainsAny(k.Version, " \t\r\n:,") || len(k.Version) > 64 {
			return nil, fmt.Errorf("%w: bad version name", ErrBadKeys)
		}
		if len(k.Key) != 32 {
			return nil, fmt.Errorf("%w: version %s: key must be 32 bytes", ErrBadKeys, k.Version)
		}
		if _, dup := p.aeads[k.Version]; dup {
			return nil, fmt.Errorf("%w: version %s listed twice", ErrBadKeys, k.Version)
		}
		a, err := newAEAD(k.Key)
		if err != nil {
			return nil, err
		}
		p.aeads[k.Version] = a
		p.order = append(p.order, k.Version)
		p.current = k.Version
	}
	return p, nil
}

// Parse reads KEKs from text: entries "version:base64key" separated by
// newlines or commas; blank lines and lines starting with '#' are
// ignored. The last entry is the current version.
func Parse(text string) (*Provider, error) {
	var keks []KEK
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(text, ",", "\n")))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, b64, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: an entry is not version:key", ErrBadKeys)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			return nil, fmt.Errorf("%w: version %s: key is not base64", ErrBadKeys, strings.TrimSpace(v))
		}
		keks = append(keks, KEK{Version: strings.TrimSpace(v), Key: key})
	}
	return NewProvider(keks...)
}

// FromFile reads KEKs from a key file (see Parse). The file should be
// readable by its owner only.
func FromFile(path string) (*Provider, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(string(b))
}

// FromEnv reads KEKs from the environment variable name (see Parse);
// an unset or empty variable is an error.
func FromEnv(name string) (*Provider, error) {
	v := os.Getenv(name)
	if v == "" {
		return nil, fmt.Errorf("%w: %s is not set", ErrBadKeys, name)
	}
	return Parse(v)
}

// GenerateEntry returns a new random KEK as a key-file entry
// "version:base64key".
func GenerateEntry(version string) (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	if _, err := NewProvider(KEK{Version: version, Key: k}); err != nil {
		return "", err
	}
	return version + ":" + base64.StdEncoding.EncodeToString(k), nil
}

// CreateFile writes a new key file at path: one KEK of 32 random bytes as
// version (GenerateEntry), mode 0600, created exclusively and synced
// before it returns. A path that exists is refused with an error
// matching fs.ErrExist (an existing key file may hold keys that still
// seal data, so it is never overwritten); a bad version name with
// ErrBadKeys. On any other failure the partly written file is removed.
func CreateFile(path, version string) error {
	entry, err := GenerateEntry(version)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(entry + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// CurrentVersion returns the last version given.
func (p *Provider) CurrentVersion() string { return p.current }

// Versions returns the versions the provider holds, in the order given
// (the current one last).
func (p *Provider) Versions() []string { return slices.Clone(p.order) }

// Has reports whether the provider holds version.
func (p *Provider) Has(version string) bool { _, ok := p.aeads[version]; return ok }

// Wrap seals dataKey under KEK version with aad.
func (p *Provider) Wrap(_ context.Context, version string, dataKey, aad []byte) ([]byte, error) {
	a, ok := p.aeads[version]
	if !ok {
		return nil, &store.KeyError{KEKVersion: version, Op: "wrap", Kind: store.ErrKeyUnavailable}
	}
	return seal(a, dataKey, aad), nil
}

// Unwrap opens a key Wrap sealed under version with the same aad.
func (p *Provider) Unwrap(_ context.Context, version string, wrapped, aad []byte) ([]byte, error) {
	a, ok := p.aeads[version]
	if !ok {
		return nil, &store.KeyError{KEKVersion: version, Op: "unwrap", Kind: store.ErrKeyUnavailable}
	}
	k, err := open(a, wrapped, aad)
	if err != nil {
		return nil, &store.KeyError{KEKVersion: version, Op: "unwrap", Kind: store.ErrKeyMismatch}
	}
	return k, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// seal returns nonce || ciphertext.
func seal(a cipher.AEAD, plain, aad []byte) []byte {
	out := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	_, _ = rand.Read(out) // crypto/rand.Read never returns an error (Go 1.24+)
	return a.Seal(out, out, plain, aad)
}

// open opens nonce || ciphertext, overwriting sealed with the plaintext.
func open(a cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	n := a.NonceSize()
	if len(sealed) < n+a.Overhead() {
		return nil, errors.New("sealed value too short")
	}
	// In place: sealed is the caller's scratch copy.
	return a.Open(sealed[n:n], sealed[:n], sealed[n:], aad)
}
