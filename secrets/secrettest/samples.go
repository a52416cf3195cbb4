// Package secrettest has real-looking (but invalid) secrets of several kinds for tests of
// the ways into a store. Each is joined from pieces at run time so that the repository
// itself holds no string that a secret scanner flags.
package secrettest

import "strings"

// Sample is a memory text holding one secret, and what Scan must report for it.
type Sample struct {
	Name    string // for subtests
	Content string
	Secret  string // the secret itself, which no answer may echo
	Kind    string // the rule that finds it
	Line    int
	Column  int
}

func join(parts ...string) string { return strings.Join(parts, "") }

// Samples returns one sample of each kind: an AWS access key id and secret, a GitHub token,
// Anthropic and OpenAI keys, a PEM private key, a URL with a password, and a long random token.
func Samples() []Sample {
	awsID := join("AKIA", "QYLPMN5H", "HHFPZAM2")
	gh := join("gh", "p_", "8dQd3pRkA1bQ9zX7", "wY2vK5mN4jL6hT0sUe3F")
	ant := join("sk-", "ant-", "api03-", strings.Repeat(join("aB3dE5fG7hJ9kL1", "mN3pQ5rS7tU9vW1x"), 3)[:93], "AA")
	oai := join("sk-", "proj-", strings.Repeat(join("Ab3De5Fg7Hj9Kl1M", "n3Pq5Rs7Tu9Vw1Xy"), 3)[:74], "T3Blbk", "FJ",
		strings.Repeat(join("Zq8v2LmX4pWt9RkY", "c6Nb1Hs3Jd5Gf7Qa"), 3)[:74])
	pem := join("-----BEGIN ", "RSA PRIVATE", " KEY-----\n",
		"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw\n",
		"7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFc\n",
		"-----END ", "RSA PRIVATE", " KEY-----")
	pass := join("Zq8v2", "LmX4pWt9Rk")
	tok := join("q7Vb2Xk9LmP4", "sTz8Rw3Ny6Hc1Jd5Fg0A")
	awsSecret := join("1tUm636uS1yOEcfP5pvf", "qJ/ml36mF7AkyHsEU0IU")
	return []Sample{
		{Name: "aws-key-id", Content: "# Deploy notes\nuse key " + awsID + " for staging\n", Secret: awsID, Kind: "aws-access-token", Line: 2, Column: 9},
		{Name: "aws-secret", Content: "[default]\naws_secret_access_key = " + awsSecret + "\n", Secret: awsSecret, Kind: "generic-api-key", Line: 2, Column: 25},
		{Name: "github-token", Content: "The CI token is " + gh + ", rotate it monthly.", Secret: gh, Kind: "github-pat", Line: 1, Column: 17},
		{Name: "anthropic-key", Content: "ANTHROPIC_API_KEY=" + ant + "\n", Secret: ant, Kind: "anthropic-api-key", Line: 1, Column: 19},
		{Name: "openai-key", Content: "openai: " + oai + "\n", Secret: oai, Kind: "openai-api-key", Line: 1, Column: 9},
		{Name: "private-key", Content: "server key:\n\n" + pem + "\n", Secret: pem, Kind: "private-key", Line: 3, Column: 1},
		{Name: "url-password", Content: "- database: postgres://admin:" + pass + "@db.internal:5432/prod\n", Secret: pass, Kind: "url-password", Line: 1, Column: 30},
		{Name: "random-token", Content: "Session cookie was " + tok + " yesterday.", Secret: tok, Kind: "high-entropy-string", Line: 1, Column: 20},
	}
}

// GitHubToken returns one sample GitHub token, for tests that need a secret and not a memory.
func GitHubToken() string { return Samples()[2].Secret }
