package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The terms of a leader fault run, read from the logs of its {@link LeaderFaultClient}s and of its
 * controller ({@code KILL pid} marks), all stamped on the host's monotonic clock. A term of
 * instance P with token T runs from the first time P logged it ({@code GRANT} or {@code VALID})
 * to the earliest of: its {@code REVOKE}, the last validity end P logged for it, P's kill. So an
 * instance that was stopped (SIGSTOP) is counted leader only up to the end of the lease it had
 * renewed, which is what the rule "revoked no later than the validity end" promises.
 */
final class LeaderHistory {

	private final List<Term> terms;

	private LeaderHistory(List<Term> terms) {
		this.terms = terms;
	}

	/** One term as the logs tell it; {@code revokedAt} and {@code validEnd} are 0 when not logged. */
	record Term(long pid, long token, long start, long validEnd, long revokedAt, String reason, long killedAt) {

		/** The end of the term: revoked, past its validity, or killed, whichever came first. */
		long end() {
			long end = Long.MAX_VALUE;
			for (long candidate : new long[] { this.validEnd, this.revokedAt, this.killedAt }) {
				if (candidate != 0) {
					end = Math.min(end, candidate);
				}
			}
			return end;
		}

	}

	static LeaderHistory read(Path controllerLog, List<Path> clientLogs) throws IOException {
		Map<Long, Long> kills = new HashMap<>();
		for (String line : Files.readAllLines(controllerLog)) {
			Checker.Event event = Checker.Event.parse(line);
			if (event.type().equals("KILL")) {
				kills.put(Long.parseLong(event.fields()[0]), event.nanos());
			}
		}
		List<Term> terms = new ArrayList<>();
		for (Path log : clientLogs) {
			if (Files.exists(log)) {
				terms.addAll(terms(Files.readAllLines(log), kills));
			}
		}
		terms.sort(Comparator.comparingLong(Term::start));
		return new LeaderHistory(terms);
	}

	private static List<Term> terms(List<String> lines, Map<Long, Long> kills) {
		Map<Long, long[]> byToken = new java.util.LinkedHashMap<>();
		Map<Long, String> reasons = new HashMap<>();
		long pid = 0;
		for (String line : lines) {
			if (line.isBlank()) {
				continue;
			}
			Checker.Event event = Checker.Event.parse(line);
			pid = event.pid();
			String type = event.type();
			if (!type.equals("GRANT") && !type.equals("VALID") && !type.equals("REVOKE")) {
				continue;
			}
			// start, valid end, revoked at
			long[] term = byToken.computeIfAbsent(Long.parseLong(event.fields()[0]),
					(token) -> new long[] { event.nanos(), 0, 0 });
			switch (type) {
				case "VALID" -> term[1] = Long.parseLong(event.fields()[1]);
				case "REVOKE" -> {
					term[2] = event.nanos();
					reasons.put(Long.parseLong(event.fields()[0]), event.fields()[1]);
				}
				default -> term[0] = Math.min(term[0], event.nanos());
			}
		}
		List<Term> terms = new ArrayList<>();
		long killedAt = kills.getOrDefault(pid, 0L);
		for (Map.Entry<Long, long[]> entry : byToken.entrySet()) {
			long[] term = entry.getValue();
			terms.add(new Term(pid, entry.getKey(), term[0], term[1], term[2], reasons.getOrDefault(entry.getKey(), ""),
					killedAt));
		}
		return terms;
	}

	List<Term> terms() {
		return this.terms;
	}

	/** Two terms of different instances that were both current for {@code nanos}. */
	record Overlap(Term first, Term second, long nanos) {

		@Override
		public String toString() {
			return this.first + " overlaps " + this.second + " by " + this.nanos / 1_000_000 + " ms";
		}

	}

	/** Pairs of terms of different instances that overlap. */
	List<Overlap> overlaps() {
		List<Overlap> overlaps = new ArrayList<>();
		for (int i = 0; i < this.terms.size(); i++) {
			for (int j = i + 1; j < this.terms.size(); j++) {
				Term a = this.terms.get(i);
				Term b = this.terms.get(j);
				if (a.pid() != b.pid() && a.start() < b.end() && b.start() < a.end()) {
					overlaps.add(new Overlap(a, b, Math.min(a.end(), b.end()) - b.start()));
				}
			}
		}
		return overlaps;
	}

	/** Terms whose token is not larger than the token of a term that started before. */
	int tokenRegressions() {
		int regressions = 0;
		long highest = Long.MIN_VALUE;
		for (Term term : this.terms) {
			if (term.token() <= highest) {
				regressions++;
			}
			highest = Math.max(highest, term.token());
		}
		return regressions;
	}

	/** The first term that started after {@code nanos}. */
	Optional<Term> firstAfter(long nanos) {
		return this.terms.stream().filter((term) -> term.start() > nanos).findFirst();
	}

	/** The term of {@code pid} with {@code token}. */
	Optional<Term> term(long pid, long token) {
		return this.terms.stream().filter((term) -> term.pid() == pid && term.token() == token).findFirst();
	}

}
