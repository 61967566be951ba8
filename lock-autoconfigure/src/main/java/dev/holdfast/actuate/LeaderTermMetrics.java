package dev.holdfast.actuate;

import java.util.Locale;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.context.ApplicationListener;

import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;

/**
 * Counts leader terms from the leadership application events: {@value #TERMS} (tags
 * {@code group}, {@code backend}) at every grant, {@value #REVOCATIONS} (tags {@code group},
 * {@code backend}, {@code reason} = {@code yielded}, {@code lost}, {@code backend_unreachable},
 * {@code shutdown}) at every revocation. Groups are few (the application names them), so the tag
 * is bounded.
 */
public class LeaderTermMetrics implements ApplicationListener<LeadershipEvent> {

	/** Counter of terms granted to this instance. */
	public static final String TERMS = "holdfast.leader.terms";

	/** Counter of this instance's terms revoked, by reason. */
	public static final String REVOCATIONS = "holdfast.leader.revocations";

	private final MeterRegistry registry;

	private final String backend;

	public LeaderTermMetrics(MeterRegistry registry, String backend) {
		this.registry = registry;
		this.backend = backend;
	}

	@Override
	public void onApplicationEvent(LeadershipEvent event) {
		if (event instanceof LeadershipGrantedEvent) {
			Counter.builder(TERMS)
				.description("Terms of leadership granted to this instance")
				.tag("group", event.getGroup())
				.tag("backend", this.backend)
				.register(this.registry)
				.increment();
		}
		else if (event instanceof LeadershipRevokedEvent revoked) {
			Counter.builder(REVOCATIONS)
				.description("Terms of leadership of this instance revoked, by reason")
				.tag("group", event.getGroup())
				.tag("backend", this.backend)
				.tag("reason", reason(revoked))
				.register(this.registry)
				.increment();
		}
	}

	/** The revocation's reason as a tag value: {@code yielded}, {@code backend_unreachable}, ... */
	static String reason(LeadershipRevokedEvent revoked) {
		return revoked.getReason().name().toLowerCase(Locale.ROOT);
	}

}
