package api_test

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/vitrine/vitrine/storage/storagetest"
)

// TestConcurrentUploadsPerUser uploads 4 images at once for each of 15
// users, in two waves, on SQLite, PostgreSQL and MariaDB: every upload
// answers 201, none a 5xx. (MariaDB picks deadlock victims among such
// uploads; storage runs their transactions again.)
func TestConcurrentUploadsPerUser(t *testing.T) {
	backends := map[string]func(t *testing.T) string{"sqlite": func(*testing.T) string { return "" }}
	if os.Getenv("VITRINE_TEST_POSTGRES") != "" {
		backends["postgres"] = func(t *testing.T) string { return storagetest.PostgresDSN(t) }
	}
	if os.Getenv("VITRINE_TEST_MYSQL") != "" {
		backends["mysql"] = func(t *testing.T) string { return storagetest.MySQLDSN(t) }
	}
	for name, dsn := range backends {
		t.Run(name, func(t *testing.T) {
			e := newEnvOn(t, dsn(t), testConfig(), nil)
			const users, perUser = 15, 4
			images := make([][]byte, 2*users*perUser)
			for i := range images {
				images[i] = pngImage(t, 16, 16, uint8(i))
			}
			for wave := range 2 {
				var wg sync.WaitGroup
				statuses := make([]string, users*perUser)
				for u := range users {
					for j := range perUser {
						i := u*perUser + j
						wg.Add(1)
						go func() {
							defer wg.Done()
							r := e.signed(http.MethodPost, fmt.Sprintf("/users/user%02d/images", u), adminKey, adminPriv,
								images[wave*users*perUser+i], "Content-Type", "image/png")
							if r.StatusCode != http.StatusCreated {
								statuses[i] = fmt.Sprintf("%d %s", r.StatusCode, r.body)
							}
						}()
					}
				}
				wg.Wait()
				for i, s := range statuses {
					if s != "" {
						t.Errorf("wave %d, upload %d of user%02d: %s", wave, i%perUser, i/perUser, s)
					}
				}
			}
		})
	}
}
