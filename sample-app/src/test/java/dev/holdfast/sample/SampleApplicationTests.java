package dev.holdfast.sample;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * One instance of the sample on a private in-memory database.
 */
@SpringBootTest(webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "spring.datasource.url=jdbc:h2:mem:sample-tests;DB_CLOSE_DELAY=-1", "sample.stock.apple=100",
				"sample.stock.fig=5", "sample.stock.plum=5",
				"sample.job.cron=* * * * * *" })
class SampleApplicationTests {

	@Autowired
	private InventoryService inventory;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private RelayPoller relay;

	@Autowired
	private LeaderElections elections;

	@LocalServerPort
	private int port;

	private final HttpClient http = HttpClient.newHttpClient();

	@Test
	void concurrentReservationsNeverOversell() throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(8);
		try {
			List<Future<Reservation>> results = new ArrayList<>();
			for (int i = 0; i < 150; i++) {
				results.add(pool.submit(() -> this.inventory.reserve("apple")));
			}
			long reserved = 0;
			for (Future<Reservation> result : results) {
				if (result.get().status() == Reservation.Status.RESERVED) {
					reserved++;
				}
			}
			assertThat(reserved).isEqualTo(100);
			assertThat(this.inventory.stock()).filteredOn((stock) -> stock.sku().equals("apple"))
				.singleElement()
				.extracting(InventoryService.Stock::qty)
				.isEqualTo(0);
			assertThat(this.inventory.reservationCounts()).containsEntry("apple", 100L);
		}
		finally {
			pool.shutdownNow();
		}
	}

	@Test
	void theRelayRunsWhileThisInstanceLeadsItsGroupAndStopsWhenItYields() throws InterruptedException {
		Leadership leadership = this.elections.join(RelayPoller.GROUP);
		assertThat(leadership.awaitLeadership(Duration.ofSeconds(10))).isPresent();
		await().atMost(Duration.ofSeconds(5)).until(() -> this.relay.isRunning() && this.relay.passes() > 0);
		leadership.yield();
		await().atMost(Duration.ofSeconds(5)).until(() -> !this.relay.isRunning());
		// alone in its group, the instance leads again after the yield's hold-off, and the relay restarts
		await().atMost(Duration.ofSeconds(10)).until(this.relay::isRunning);
	}

	@Test
	void writeWithAnOlderFencingTokenIsRejected() throws Exception {
		// a later lock holder (token Long.MAX_VALUE) wrote the row: this holder's token is older
		this.jdbc.update("UPDATE stock SET fence = ? WHERE sku = 'fig'", Long.MAX_VALUE);
		HttpResponse<String> response = post("/reserve/fig");
		assertThat(response.statusCode()).isEqualTo(409);
		assertThat(response.body()).contains("\"status\":\"FENCED\"");
		assertThat(this.jdbc.queryForObject("SELECT qty FROM stock WHERE sku = 'fig'", Integer.class)).isEqualTo(5);
	}

	@Test
	void unknownSkuIsNotFound() throws Exception {
		HttpResponse<String> response = post("/reserve/durian");
		assertThat(response.statusCode()).isEqualTo(404);
		assertThat(response.body()).contains("Unknown SKU 'durian'");
	}

	@Test
	void scheduledJobRecordsOneRunPerTick() throws Exception {
		String runs = await().atMost(java.time.Duration.ofSeconds(20))
			.alias("at least two ticks recorded")
			.until(() -> get("/runs"), (body) -> body.split("\"tick\"").length > 2);
		assertThat(runs).contains("\"runs\":1").doesNotContain("\"runs\":2");
	}

	@Test
	void locksAndStatsAreListed() throws Exception {
		assertThat(get("/locks")).contains("\"backend\":\"jdbc\"").contains("\"leases\":[");
		assertThat(get("/actuator/locks")).contains("\"backend\":\"jdbc\"").contains("\"leases\":[");
		this.inventory.reserve("plum");
		assertThat(get("/stats")).contains("\"inventory\":{\"acquired\":");
	}

	@Test
	void healthShowsHoldfastsDetails() throws Exception {
		// what the README describes under Health: the holdfast indicator with its backend
		assertThat(get("/actuator/health")).contains("\"holdfast\":{\"details\":{")
			.contains("\"backend\":\"jdbc\"")
			.contains("\"held\":");
	}

	private HttpResponse<String> post(String path) throws Exception {
		return this.http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path))
			.POST(HttpRequest.BodyPublishers.noBody())
			.build(), HttpResponse.BodyHandlers.ofString());
	}

	private String get(String path) throws Exception {
		HttpResponse<String> response = this.http.send(
				HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + this.port + path)).build(),
				HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(path).isEqualTo(200);
		return response.body();
	}

}
