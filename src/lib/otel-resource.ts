import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from "@opentelemetry/resources";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import packageJson from "../../package.json" with { type: "json" };

/*
 * The OpenTelemetry resource of this process (traces and exported logs): service.name "gatehouse" and its version,
 * then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES as the specification says. Imported only when tracing or
 * OTLP log export is on (the SDK is not loaded otherwise).
 */
export function serviceResource() {
  return defaultResource()
    .merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: "gatehouse",
        [ATTR_SERVICE_VERSION]: packageJson.version,
      }),
    )
    .merge(detectResources({ detectors: [envDetector] }));
}
