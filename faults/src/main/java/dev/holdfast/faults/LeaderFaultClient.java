package dev.holdfast.faults;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.holdfast.LeaderTerm;
import dev.holdfast.LeaseInfo;
import dev.holdfast.Leadership;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.leader.DefaultLeaderElections;

/**
 * One instance of a leader group in a leader fault run ({@link LeaderRun}), as its own JVM: it
 * joins the group through {@link DefaultLeaderElections} on {@link FaultClient#backend}, and logs,
 * each line stamped with {@link System#nanoTime()} (the host's monotonic clock) and flushed:
 * <ul>
 * <li>{@code GRANT token} and {@code REVOKE token reason}, from a listener of the group;</li>
 * <li>{@code VALID token endNanos} for a new term and whenever its validity end moves by more than
 * 10 ms (a renewal), read every 5 ms from the held leases: the instant, on the monotonic clock,
 * after which this instance may no longer count itself leader;</li>
 * <li>{@code WR token value result}: the leader's work, a read-sleep-write of the fenced counter of
 * the {@link Resource} with its term's token ({@code workMs} between read and write), so that a
 * leader stopped during its work writes with its old token when it resumes;</li>
 * <li>{@code START} and {@code STOP}.</li>
 * </ul>
 * SIGTERM is a graceful stop: a shutdown hook closes the elections (the term revoked with
 * {@code SHUTDOWN}, its lease released) before the JVM exits. Arguments {@code key=value}:
 * {@code backend}, {@code nodes}, {@code resource} as for {@link FaultClient}, {@code group},
 * {@code leaseMs}, {@code workMs}, {@code log}, {@code stopFile}.
 */
public final class LeaderFaultClient {

	private static final String LEADER_LOCK = "leader";

	/** How far a validity end must move to count as a renewal. */
	private static final long RENEWED_NANOS = Duration.ofMillis(10).toNanos();

	private LeaderFaultClient() {
	}

	public static void main(String[] args) throws Exception {
		Map<String, String> arguments = FaultClient.parse(args);
		Path stopFile = Path.of(arguments.get("stopFile"));
		long workMs = Long.parseLong(arguments.get("workMs"));
		PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(arguments.get("log")),
				StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
		FaultClient.Events events = new FaultClient.Events(out, ProcessHandle.current().pid());
		SharedResource resource = SharedResource.connect(arguments.get("resource"));
		FaultClient.Backend backend = FaultClient.backend(arguments.get("backend"),
				Arrays.asList(arguments.get("nodes").split(",")));
		DefaultLockTemplate template = new DefaultLockTemplate(backend.backend(),
				LockSettings.defaults().withPollInterval(Duration.ofMillis(50)));
		DefaultLeaderElections elections = new DefaultLeaderElections(template,
				Duration.ofMillis(Long.parseLong(arguments.get("leaseMs"))), (event) -> {
				});
		Leadership leadership = elections.join(arguments.get("group"));
		leadership.addListener((event) -> {
			if (event instanceof LeadershipGrantedEvent) {
				events.log("GRANT " + event.getTerm().fencingToken());
			}
			else if (event instanceof LeadershipRevokedEvent revoked) {
				events.log("REVOKE " + event.getTerm().fencingToken() + " " + revoked.getReason());
			}
		});
		AtomicBoolean stopped = new AtomicBoolean();
		Runnable stop = () -> {
			if (stopped.compareAndSet(false, true)) {
				// Graceful: the term is revoked and its lease released before anything else closes.
				elections.close();
				events.log("STOP");
				template.close();
				backend.close();
				resource.close();
				out.close();
			}
		};
		Runtime.getRuntime().addShutdownHook(new Thread(stop, "leader-client-stop"));
		Thread worker = new Thread(() -> work(leadership, resource, workMs, events, stopped), "leader-work");
		worker.setDaemon(true);
		worker.start();
		elections.start();
		events.log("START " + arguments.get("backend"));
		long lastToken = 0;
		long lastEnd = 0;
		while (!stopped.get() && !Files.exists(stopFile)) {
			Optional<LeaderTerm> term = leadership.term();
			if (term.isPresent()) {
				long token = term.get().fencingToken();
				long end = validityEndNanos(template, token);
				// A renewal moves the end by a third of the lease; reading the two clocks moves it by
				// microseconds, by milliseconds when this thread is preempted between the reads.
				if (end != 0 && (token != lastToken || Math.abs(end - lastEnd) > RENEWED_NANOS)) {
					lastToken = token;
					lastEnd = end;
					events.log("VALID " + token + " " + end);
				}
			}
			Thread.sleep(5);
		}
		stop.run();
		System.exit(0);
	}

	/**
	 * The end of the term's validity on the monotonic clock: {@link LeaseInfo#expiresAt()} is that
	 * end shown on the template's clock; 0 when the lease is no longer listed.
	 */
	private static long validityEndNanos(DefaultLockTemplate template, long token) {
		for (LeaseInfo lease : template.heldLeases()) {
			if (lease.name().equals(LEADER_LOCK) && lease.fencingToken() == token) {
				Instant wall = template.clock().instant();
				return System.nanoTime() + Duration.between(wall, lease.expiresAt()).toNanos();
			}
		}
		return 0;
	}

	/** The leader's work: read, {@code workMs}, write the fenced counter with the term's token. */
	private static void work(Leadership leadership, SharedResource resource, long workMs,
			FaultClient.Events events, AtomicBoolean stopped) {
		while (!stopped.get()) {
			try {
				Optional<LeaderTerm> term = leadership.term();
				if (term.isEmpty()) {
					Thread.sleep(10);
					continue;
				}
				long token = term.get().fencingToken();
				Resource.Read read = resource.read(Resource.FENCED, token, true);
				Thread.sleep(workMs);
				String result = read.accepted() ? resource.write(Resource.FENCED, token, read.value() + 1, true)
						: "rejected";
				events.log("WR " + token + " " + (read.value() + 1) + " " + result);
			}
			catch (InterruptedException ex) {
				return;
			}
			catch (RuntimeException ex) {
				if (!stopped.get()) {
					events.log("ERR " + ex.getClass().getSimpleName());
				}
			}
		}
	}

}
