package dev.holdfast.sample;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import dev.holdfast.HeldLeases;
import dev.holdfast.LeaseInfo;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockNotAcquiredException;

/**
 * The sample's HTTP interface: reserve stock, read stock, runs per tick of the scheduled job,
 * the locks this instance holds and its lock counters.
 */
@RestController
public class SampleController {

	/** Title of the 503 answer when the lock stayed held by another caller for the whole wait time. */
	public static final String LOCK_NOT_ACQUIRED = "Lock not acquired";

	/** Title of the 503 answer when the lock backend could not be reached (the call failed closed). */
	public static final String LOCK_BACKEND_FAILED = "Lock backend failed";

	private final InventoryService inventory;

	private final JobRuns jobRuns;

	private final HeldLeases locks;

	private final LockStats stats;

	private final SampleProperties properties;

	public SampleController(InventoryService inventory, JobRuns jobRuns, HeldLeases locks, LockStats stats,
			SampleProperties properties) {
		this.inventory = inventory;
		this.jobRuns = jobRuns;
		this.locks = locks;
		this.stats = stats;
		this.properties = properties;
	}

	/**
	 * Takes one unit of {@code sku}: {@code 200} with status {@code RESERVED} or
	 * {@code SOLD_OUT}, {@code 409} when the write was fenced off, {@code 503} when the lock was
	 * not acquired or its backend failed, {@code 404} for an unknown SKU.
	 */
	@PostMapping("/reserve/{sku}")
	public ResponseEntity<Reservation> reserve(@PathVariable String sku) {
		Reservation reservation = this.inventory.reserve(sku);
		HttpStatus status = (reservation.status() == Reservation.Status.FENCED) ? HttpStatus.CONFLICT : HttpStatus.OK;
		return ResponseEntity.status(status).body(reservation);
	}

	/**
	 * The stock table and the reservations recorded per SKU.
	 */
	@GetMapping("/stock")
	public Map<String, Object> stock() {
		Map<String, Object> result = new LinkedHashMap<>();
		result.put("stock", this.inventory.stock());
		result.put("reservations", this.inventory.reservationCounts());
		return result;
	}

	/**
	 * Runs per tick of a scheduled job, oldest tick first.
	 */
	@GetMapping("/runs")
	public List<JobRuns.TickRuns> runs(@RequestParam(defaultValue = TickJob.NAME) String job) {
		return this.jobRuns.runsPerTick(job);
	}

	/**
	 * The leases this instance holds now (other instances' leases are not listed).
	 */
	@GetMapping("/locks")
	public Map<String, Object> locks() {
		List<LeaseInfo> held = this.locks.heldLeases();
		Map<String, Object> result = new LinkedHashMap<>();
		result.put("instance", this.properties.getInstanceId());
		result.put("backend", this.locks.backendName());
		result.put("leases", held);
		return result;
	}

	/**
	 * This instance's lock counters per lock name.
	 */
	@GetMapping("/stats")
	public Map<String, Object> stats() {
		Map<String, Object> result = new LinkedHashMap<>();
		result.put("instance", this.properties.getInstanceId());
		result.put("backend", this.locks.backendName());
		result.put("locks", this.stats.snapshot());
		return result;
	}

	@ExceptionHandler
	ProblemDetail unknownSku(UnknownSkuException ex) {
		return ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND, ex.getMessage());
	}

	@ExceptionHandler
	ProblemDetail notAcquired(LockNotAcquiredException ex) {
		ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.SERVICE_UNAVAILABLE, ex.getMessage());
		problem.setTitle(LOCK_NOT_ACQUIRED);
		return problem;
	}

	@ExceptionHandler
	ProblemDetail backendFailed(LockBackendException ex) {
		ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.SERVICE_UNAVAILABLE, ex.getMessage());
		problem.setTitle(LOCK_BACKEND_FAILED);
		return problem;
	}

}
