package dev.holdfast.autoconfigure;

import java.util.Map;
import java.util.stream.Collectors;

import org.springframework.boot.autoconfigure.condition.ConditionMessage;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * Matches when {@code holdfast.backends.<name>} configures backends besides the default one, and
 * names them with their types in the condition report ({@code --debug}).
 */
class OnNamedBackendsCondition extends SpringBootCondition {

	@Override
	public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
		ConditionMessage.Builder message = ConditionMessage.forCondition("Holdfast named backends");
		Map<String, HoldfastProperties.Backend> backends = Binder.get(context.getEnvironment())
			.bind(NamedBackend.PREFIX, Bindable.mapOf(String.class, HoldfastProperties.Backend.class))
			.orElse(Map.of());
		if (backends.isEmpty()) {
			return ConditionOutcome.noMatch(message.didNotFind("property").items(NamedBackend.PREFIX + ".*"));
		}
		return ConditionOutcome.match(message.found("backend", "backends")
			.items(backends.entrySet()
				.stream()
				.map((entry) -> entry.getKey() + " (" + NamedBackend.typeName(entry.getValue()) + ")")
				.collect(Collectors.toList())));
	}

}
