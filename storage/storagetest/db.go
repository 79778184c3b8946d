package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vitrine/vitrine/storage"
)

// TestDB runs the database conformance suite. open returns a fresh, empty
// DB opened without a secret; it must arrange its own cleanup. The
// encryption cases reopen nothing: they use OpenWithSecret when given.
func TestDB(t *testing.T, open func(t *testing.T) *storage.DB) {
	TestDBWithSecret(t, open, nil)
}

// TestDBWithSecret is TestDB plus the key-encryption cases. openSecret
// opens a fresh, empty DB with the given secret; reopen, if the backend can,
// opens the same database again with another secret (it may be nil).
func TestDBWithSecret(t *testing.T, open func(t *testing.T) *storage.DB, openSecret func(t *testing.T, secret []byte) (db *storage.DB, reopen func(secret []byte) *storage.DB)) {
	cases := []struct {
		name string
		fn   func(t *testing.T, db *storage.DB)
	}{
		{"InsertAndGetImage", testInsertImage},
		{"InsertImageExisting", testInsertImageExisting},
		{"InsertImageConcurrent", testInsertImageConcurrent},
		{"InsertImageInvalid", testInsertImageInvalid},
		{"CaseSensitiveNames", testCaseSensitive},
		{"DeleteImageCascades", testDeleteImage},
		{"ListFilters", testListFilters},
		{"ListSortAndPaging", testListSort},
		{"ListSameSecondNewestFirst", testListSameSecond},
		{"ImageFrames", testImageFrames},
		{"ListWithMetadata", testListMetadata},
		{"ListMetadataFilter", testListMetadataFilter},
		{"LastModifiedUsersStats", testLastModified},
		{"Metadata", testMetadata},
		{"ShortURLs", testShortURLs},
		{"Keys", testKeys},
		{"CreateKey", testCreateKey},
		{"Groups", testGroups},
		{"Rules", testRules},
		{"RulesCascade", testRulesCascade},
		{"Sessions", testSessions},
		{"Audit", testAudit},
		{"Events", testEvents},
		{"EventsOrder", testEventsOrder},
		{"EventsConcurrentDrains", testEventsConcurrentDrains},
		{"EventsWritten", testEventsWritten},
		{"EventsTraceparent", testEventsTraceparent},
		{"Webhooks", testWebhooks},
		{"FanOut", testFanOut},
		{"FanOutTaken", testFanOutTaken},
		{"FanOutReplayed", testFanOutReplayed},
		{"FinishDeliveries", testFinishDeliveries},
		{"DueDeliveries", testDueDeliveries},
		{"ClaimDelivery", testClaimDelivery},
		{"DeliveryLog", testDeliveryLog},
		{"Redeliver", testRedeliver},
		{"PurgeDeliveries", testPurgeDeliveries},
		{"DeleteWebhookDeliveries", testDeleteWebhookDeliveries},
		{"Usage", testUsage},
		{"ListHitsFollowWrites", testListHits},
		{"VariantCache", testVariantCache},
		{"VariantCacheLRU", testVariantCacheLRU},
		{"VariantList", testVariantList},
		{"VariantCacheShared", testVariantCacheShared},
		{"VariantCacheMaxAge", testVariantCacheMaxAge},
		{"VariantCacheFlushFailure", testVariantCacheFlushFailure},
		{"QueueUpload", testQueueUpload},
		{"QueueReservationLost", testQueueReservationLost},
		{"QueueDelete", testQueueDelete},
		{"QueueHeld", testQueueHeld},
		{"QueueVariantOfDeletedImage", testQueueVariantOfDeletedImage},
		{"QueueFailures", testQueueFailures},
		{"QueueConcurrentCollectors", testQueueConcurrentCollectors},
		{"Check", testCheck},
		{"CheckFilters", testCheckFilters},
		{"Properties", testProperties},
		{"Qualities", testQualities},
		{"PendingAnalysis", testPendingAnalysis},
		{"Similar", testSimilar},
		{"Blocklist", testBlocklist},
		{"BlocklistConcurrent", testBlocklistConcurrent},
		{"BlocklistMatches", testBlocklistMatches},
		{"SimilarMany", testSimilarMany},
		{"Variations", testVariations},
		{"VariationsFailures", testVariationsFailures},
		{"VariationsCheck", testVariationsCheck},
		{"UploadTokens", testUploadTokens},
		{"UploadTokenCommit", testUploadTokenCommit},
		{"UploadTokenRace", testUploadTokenRace},
		{"Erasure", testErasure},
		{"ErasureLeftovers", testErasureLeftovers},
		{"ErasureFailures", testErasureFailures},
		{"ErasureConcurrent", testErasureConcurrent},
		{"ErasureRacesUploads", testErasureRacesUploads},
		{"QuotaImages", testQuotaImages},
		{"QuotaBytes", testQuotaBytes},
		{"QuotaOverride", testQuotaOverride},
		{"QuotaConcurrent", testQuotaConcurrent},
		{"VariantQuota", testVariantQuota},
		{"CheckUsage", testCheckUsage},
		{"FilterVersions", testFilterVersions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, open(t))
		})
	}
	if openSecret != nil {
		t.Run("KeyEncryption", func(t *testing.T) { testKeyEncryption(t, openSecret) })
		t.Run("WebhookSecretSealed", func(t *testing.T) { testWebhookSecretSealed(t, openSecret) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// base is a fixed, whole-second time for test records.
var base = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func image(user, id string, added time.Time) *storage.Image {
	return &storage.Image{
		User: user, Identifier: id, Size: int64(len(id)) * 100, Extension: "png", Mime: "image/png",
		Width: 10, Height: 20, Checksum: "sum-" + id, Added: added, Updated: added,
	}
}

func mustInsert(t *testing.T, db *storage.DB, imgs ...*storage.Image) {
	t.Helper()
	for _, img := range imgs {
		created, err := db.InsertImage(ctx(t), img)
		if err != nil || !created {
			t.Fatalf("InsertImage(%s/%s) = %v, %v; want true, nil", img.User, img.Identifier, created, err)
		}
	}
}

func wantErr(t *testing.T, what string, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: error %v, want %v", what, err, kind)
	}
}
