package dev.holdfast.faults;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** What a fault can act on: the backend's nodes, the client processes and the controller log. */
public final class FaultContext {

	private static final long FRESH_ACQUISITION_NANOS = Duration.ofMillis(50).toNanos();

	private final List<RedisNode> nodes;

	private final PostgresNode postgres;

	private final ZooKeeperEnsemble zooKeeper;

	private final List<Process> clients;

	private final List<Path> clientLogs;

	private final PrintWriter log;

	FaultContext(List<RedisNode> nodes, PostgresNode postgres, ZooKeeperEnsemble zooKeeper, List<Process> clients,
			List<Path> clientLogs, PrintWriter log) {
		this.nodes = nodes;
		this.postgres = postgres;
		this.zooKeeper = zooKeeper;
		this.clients = clients;
		this.clientLogs = clientLogs;
		this.log = log;
	}

	/** Logs a controller event ({@code FAULT <what>}, {@code HEAL <what>}) on the shared clock. */
	public void mark(String event) {
		this.log.println(System.nanoTime() + " 0 " + event);
		this.log.flush();
	}

	public List<RedisNode> nodes() {
		return this.nodes;
	}

	/** The database's port of a {@link FaultRun#jdbc(boolean) jdbc} run. */
	public int postgresPort() {
		return java.net.URI.create(postgres().jdbcUrl().substring("jdbc:".length())).getPort();
	}

	/** The ensemble of a {@link FaultRun#zookeeper(int) zookeeper} run. */
	ZooKeeperEnsemble zooKeeper() {
		if (this.zooKeeper == null) {
			throw new IllegalStateException("Not a zookeeper run: there is no ensemble");
		}
		return this.zooKeeper;
	}

	/** The database of a {@link FaultRun#jdbc(boolean) jdbc} run. */
	PostgresNode postgres() {
		if (this.postgres == null) {
			throw new IllegalStateException("Not a jdbc run: there is no PostgreSQL node");
		}
		return this.postgres;
	}

	/**
	 * Stops with SIGSTOP a client that is inside its critical section (its last event is
	 * {@code ACQ}) for {@code pause}, then resumes it.
	 */
	public void pauseHolder(Duration pause) throws IOException {
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (System.nanoTime() < deadline) {
			for (int i = 0; i < this.clients.size(); i++) {
				if (!freshAcquisition(i)) {
					continue;
				}
				long pid = this.clients.get(i).pid();
				Signals.send(pid, "STOP");
				// Still inside the hold, and early in it: a holder stopped later may already
				// have sent its write (logged only when the reply came), and the run would
				// then show nothing.
				if (freshAcquisition(i)) {
					mark("FAULT pause-client " + pid);
					RedisNode.sleep(pause.toMillis());
					Signals.send(pid, "CONT");
					mark("HEAL pause-client " + pid);
					return;
				}
				Signals.send(pid, "CONT");
			}
			RedisNode.sleep(2);
		}
		throw new IllegalStateException("No client was seen holding the lock within 10s");
	}

	/** Whether client {@code i}'s last event is an acquisition less than 50 ms old. */
	private boolean freshAcquisition(int client) throws IOException {
		String[] last = lastLine(client).split(" ", 3);
		return last.length == 3 && last[2].startsWith("ACQ")
				&& System.nanoTime() - Long.parseLong(last[0]) < FRESH_ACQUISITION_NANOS;
	}

	/** Waits (up to 10 s) until some client is inside its critical section (last event {@code ACQ}). */
	public void awaitHolder() throws IOException {
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (System.nanoTime() < deadline) {
			for (int i = 0; i < this.clients.size(); i++) {
				if (lastEvent(i).startsWith("ACQ")) {
					return;
				}
			}
			RedisNode.sleep(2);
		}
		throw new IllegalStateException("No client was seen holding the lock within 10s");
	}

	/**
	 * Waits (up to 10 s) until a client logs an acquisition after this call began: the fault
	 * then strikes early in a hold.
	 * @return the index of that client
	 */
	public int awaitNewHolder() throws IOException {
		long since = System.nanoTime();
		long deadline = since + Duration.ofSeconds(10).toNanos();
		while (System.nanoTime() < deadline) {
			for (int i = 0; i < this.clients.size(); i++) {
				String[] last = lastLine(i).split(" ", 3);
				if (last.length == 3 && last[2].startsWith("ACQ") && Long.parseLong(last[0]) > since) {
					return i;
				}
			}
			RedisNode.sleep(2);
		}
		throw new IllegalStateException("No client took the lock within 10s");
	}

	/** The client JVMs, by index. */
	public List<Process> clients() {
		return this.clients;
	}

	/**
	 * The group id that client {@code index} runs with when the run put
	 * {@linkplain FaultRun#clientsInOwnGroups() clients in their own groups}.
	 */
	public static int clientGroup(int index) {
		return 47_000 + index;
	}

	/**
	 * Stops with SIGSTOP a {@link BootFaultClient} that is running the tick job (its last tick
	 * event is {@code TICK}) for {@code pause}, then resumes it.
	 */
	public void pauseTickRunner(Duration pause) throws IOException {
		long pid = this.clients.get(stopTickRunner()).pid();
		mark("FAULT pause-tick-runner " + pid);
		RedisNode.sleep(pause.toMillis());
		Signals.send(pid, "CONT");
		mark("HEAL pause-tick-runner " + pid);
	}

	/** Kills with SIGKILL a {@link BootFaultClient} that is running the tick job. */
	public void killTickRunner() throws IOException {
		Process client = this.clients.get(stopTickRunner());
		client.destroyForcibly();
		mark("FAULT kill-tick-runner " + client.pid());
		// A crash is over at once: what follows is the others' recovery.
		mark("HEAL kill-tick-runner " + client.pid());
	}

	/**
	 * Waits (up to 10 s) until a {@link BootFaultClient} is inside a tick run (its last tick
	 * event is {@code TICK}): a backend fault then strikes while a claim and a job lock are fresh.
	 */
	public void awaitTickRunner() throws IOException {
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (System.nanoTime() < deadline) {
			for (int i = 0; i < this.clients.size(); i++) {
				if (runsTick(i)) {
					return;
				}
			}
			RedisNode.sleep(20);
		}
		throw new IllegalStateException("No client was seen running the tick job within 10s");
	}

	/** Finds a client inside a tick run, stopped (SIGSTOP) there; its index. */
	private int stopTickRunner() throws IOException {
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (System.nanoTime() < deadline) {
			for (int i = 0; i < this.clients.size(); i++) {
				if (!runsTick(i)) {
					continue;
				}
				Signals.send(this.clients.get(i).pid(), "STOP");
				if (runsTick(i)) {
					return i;
				}
				Signals.send(this.clients.get(i).pid(), "CONT");
			}
			RedisNode.sleep(20);
		}
		throw new IllegalStateException("No client was seen running the tick job within 10s");
	}

	private boolean runsTick(int client) throws IOException {
		Path log = this.clientLogs.get(client);
		if (!Files.exists(log) || !this.clients.get(client).isAlive()) {
			return false;
		}
		List<String> ticks = Files.readAllLines(log)
			.stream()
			.filter((line) -> line.contains(" TICK ") || line.contains(" TEND "))
			.toList();
		return !ticks.isEmpty() && ticks.get(ticks.size() - 1).contains(" TICK ");
	}

	/** Waits until every client logged {@code START}. */
	void awaitStarted(Duration timeout) throws IOException {
		long deadline = System.nanoTime() + timeout.toNanos();
		for (Path log : this.clientLogs) {
			while (!Files.exists(log) || Files.readAllLines(log).stream().noneMatch((l) -> l.contains(" START "))) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("A client did not start within " + timeout + ", see " + log);
				}
				RedisNode.sleep(50);
			}
		}
	}

	/** Waits until the clients together logged {@code count} acquisitions. */
	void awaitAcquisitions(int count, Duration timeout) throws IOException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			long acquisitions = 0;
			for (Path log : this.clientLogs) {
				if (Files.exists(log)) {
					acquisitions += Files.readAllLines(log).stream().filter((l) -> l.contains(" ACQ ")).count();
				}
			}
			if (acquisitions >= count) {
				return;
			}
			RedisNode.sleep(50);
		}
		throw new IllegalStateException("Clients made fewer than " + count + " acquisitions within " + timeout);
	}

	private String lastEvent(int client) throws IOException {
		String[] parts = lastLine(client).split(" ", 3);
		return (parts.length == 3) ? parts[2] : "";
	}

	private String lastLine(int client) throws IOException {
		Path log = this.clientLogs.get(client);
		if (!Files.exists(log)) {
			return "";
		}
		List<String> lines = Files.readAllLines(log);
		return lines.isEmpty() ? "" : lines.get(lines.size() - 1);
	}

}
