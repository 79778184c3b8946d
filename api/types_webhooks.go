package api

// The JSON bodies of the webhook routes: subscriptions, deliveries and
// pings (types.go says how the answer types are used).

// Webhook is a subscription (GET /webhooks/{webhook}); its secret is shown
// only when it is created (WebhookCreated).
type Webhook struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Users       []string `json:"users"`
	Description string   `json:"description"`
	Active      bool     `json:"active"`
	// Failing is true once a delivery was given up on, until one
	// succeeds; FailingSince says since when.
	Failing      bool    `json:"failing"`
	FailingSince *string `json:"failingSince"`
	Created      string  `json:"created"`
	Updated      string  `json:"updated"`
}

// WebhookCreated is POST /webhooks: the subscription and its secret.
type WebhookCreated struct {
	Webhook
	Secret string `json:"secret"`
}

// WebhookList is GET /webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// Delivery is one event on its way to a subscription, with its attempts.
type Delivery struct {
	ID      int64  `json:"id"`
	EventID string `json:"eventId"`
	Type    string `json:"type"`
	Subject string `json:"subject"`
	// State is pending, delivered or failed.
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	Created  string `json:"created"`
	// NextAttempt is set while pending, Finished once delivered or failed.
	NextAttempt *string           `json:"nextAttempt"`
	Finished    *string           `json:"finished"`
	LastStatus  int               `json:"lastStatus"`
	LastError   *string           `json:"lastError"`
	Log         []DeliveryAttempt `json:"log"`
}

// DeliveryAttempt is one try of a delivery.
type DeliveryAttempt struct {
	Time string `json:"time"`
	// Status is the receiver's HTTP status, 0 when it gave none.
	Status int `json:"status"`
	// Latency is in seconds.
	Latency float64 `json:"latency"`
	// Response is the first bytes (at most 1024) of the answer.
	Response string  `json:"response"`
	Error    *string `json:"error"`
}

// DeliveryList is GET /webhooks/{webhook}/deliveries.
type DeliveryList struct {
	Search     Search     `json:"search"`
	Deliveries []Delivery `json:"deliveries"`
}

// PingResult is POST /webhooks/{webhook}/ping: what the receiver made of
// a test event.
type PingResult struct {
	// ID is the test event's id (its webhook-id header).
	ID        string  `json:"id"`
	Delivered bool    `json:"delivered"`
	Status    int     `json:"status"`
	Latency   float64 `json:"latency"`
	Response  string  `json:"response"`
	Error     *string `json:"error"`
}
